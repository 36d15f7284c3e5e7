/**
 * An operator's cancel: the run's flow receives its withdrawal event, as
 * `baton_withdraw` delivers it for the requester (`deliverWithdrawal`, one
 * compare-and-set write of the request), but on the operator's word instead
 * of the requester's; the audit trail records the round `via: 'operator'`
 * with the operator and the reason. A flow with no withdrawal path where it
 * stands refuses, and nothing changes: that is `terminate`'s case.
 */
import type { RoundOutcome } from '../contract/outcome.js';
import { load } from '../decisions/access.js';
import type { DecisionsPort } from '../decisions/port.js';
import { deliverWithdrawal } from '../decisions/requestTools.js';
import type { OperatorRequest } from './types.js';

/** What refusals of a cancel name. */
const CANCEL = 'baton runs cancel';

/** Cancel a run through its flow's withdrawal (see `OperatorTools.cancel`). */
export async function cancelRun(core: DecisionsPort, request: OperatorRequest): Promise<RoundOutcome> {
  const loaded = await load(core, CANCEL, request.id);
  if ('refusal' in loaded) return loaded.refusal!;
  return deliverWithdrawal(core, loaded, {
    caller: request.operator,
    via: 'operator',
    tool: CANCEL,
    reason: request.reason,
  });
}
