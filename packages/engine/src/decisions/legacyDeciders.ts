/**
 * Decisions recorded before ledger schema version 6 held the decider's principal
 * readably. Their migration moves that value into `decider_name` and empties
 * `decider`, since only the engine holds the key of the keyed hash; this module
 * has a ledger rewrite those rows once, when a runner is created: the decider's
 * keyed hash, the readable name only when names are stored, and the content
 * sealed again with the principal inside it. Until that is done, reading such a
 * row still works (`openDecision` opens the old sealing). The rewrite runs in
 * the background, never holds or fails a round, and logs what it did.
 */
import type { RequestStateCodec } from '../codec/types.js';
import type { RunnerLogEvent } from '../contract/call.js';
import type { FullLedger } from '../contract/ledger.js';
import { rewriteLegacyDecider } from './parked.js';

/**
 * Have `ledger` rewrite its legacy deciders (`createRunner` calls it when the ledger keeps decisions); resolves once done, never rejects:
 * a failure is logged (`ledger_upgrade_error`) and the next runner created tries again.
 */
export async function rewriteLegacyDeciders(
  ledger: FullLedger,
  codec: RequestStateCodec,
  storeNames: boolean,
  log: (event: RunnerLogEvent) => void,
): Promise<void> {
  try {
    const rewritten = await ledger.decisions.rewriteLegacyDeciders((legacy) =>
      rewriteLegacyDecider(codec, legacy, storeNames),
    );
    if (rewritten > 0) log({ type: 'ledger_upgrade', rewritten });
  } catch (error) {
    log({ type: 'ledger_upgrade_error', error });
  }
}
