/**
 * The operator commands (`baton runs`, `baton delegates`, `baton inspect
 * --audit`) read a ledger that `baton serve --ledger` wrote; they never
 * create one. Opening a SQLite file that is not there would create an empty
 * database (and its folder) and answer "no runs", which hides a mistyped
 * path: {@link requireExistingLedger} refuses it first, in one line. Only
 * `sqlite:` URLs are checked (a PostgreSQL database that does not exist fails
 * to connect; `memory:` is always empty). `baton serve` creates its ledger and
 * does not call this.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseLedgerUrl } from '@baton/store';
import { CliError, oneLine } from './cliError.js';

/**
 * @throws CliError `no ledger at <path>: the file does not exist …` when `url` is `sqlite:PATH` and
 *   PATH is not there; a URL of an unsupported form is a CliError too (the store's message).
 */
export function requireExistingLedger(url: string): void {
  let location: ReturnType<typeof parseLedgerUrl>;
  try {
    location = parseLedgerUrl(url);
  } catch (error) {
    throw new CliError(`cannot open the ledger: ${oneLine(error)}`);
  }
  if (location.kind === 'sqlite' && !existsSync(location.path)) {
    throw new CliError(
      `no ledger at ${resolve(location.path)}: the file does not exist (baton serve --ledger ${url} creates it; check the path)`,
    );
  }
}
