/**
 * A start-up check of `baton serve`: an instance without `BATON_KEYS` seals
 * with a random per-process key, so it can read nothing another process
 * wrote. On a ledger that already holds requests sealed under other key ids
 * (another instance's, or an earlier run's with its own random key) every read
 * of those would be refused, so this is a configuration error, not a warning:
 * {@link refuseForeignLedger} throws one line naming the key id found. It
 * reads a few rows through `LedgerRuns.listRuns` and opens their sealed state with the server's codec: only a row
 * that names a key the ring lacks counts (an altered row does not).
 */
import { type FullLedger, InvalidRequestStateError, type RequestStateCodec } from '@baton/engine';
import { CliError } from './cliError.js';

/** How many rows are looked at. */
const ROWS_LOOKED_AT = 5;

/**
 * Refuse to serve with a random key on a ledger holding requests sealed under other key ids.
 * @throws CliError `the ledger holds requests sealed with key id … (request R-…)…` when one is found.
 */
export async function refuseForeignLedger(ledger: FullLedger, codec: RequestStateCodec): Promise<void> {
  const rows = await ledger.runs.listRuns({ limit: ROWS_LOOKED_AT });
  for (const row of rows) {
    try {
      codec.openBlob(row.state, 'parked');
    } catch (error) {
      if (!(error instanceof InvalidRequestStateError) || error.keyId === undefined) continue;
      throw new CliError(
        `BATON_KEYS is not set, and the ledger holds requests sealed with key id ${error.keyId} (request ${row.id}) that a random per-process key cannot read: start every instance on this ledger with the same BATON_KEYS ("baton keygen" makes one), or use another ledger`,
      );
    }
  }
}
