/**
 * An operator's terminate: a waiting run ends whatever its flow says. Its
 * parked row is rewritten `terminated`, with the final outcome "Terminated by
 * an operator: <reason>" sealed in (what its requester's `baton_resume` and
 * held call answer from then on), in one compare-and-set on the version the
 * operator read: of it and any racing write (a decision, a withdrawal, another
 * operator) exactly one wins, and a lost terminate says what won. Its pending
 * decisions are closed and the audit trail records the end `via: 'operator'`
 * with the operator and the reason. The flow's code is never run, so a run of
 * a flow this server does not serve (or no longer can) ends too.
 */
import type { ParkedRequest } from '../contract/ledger.js';
import type { RoundOutcome } from '../contract/outcome.js';
import { refuse } from '../decisions/access.js';
import { finalText } from '../decisions/advance.js';
import { outboxMessages } from '../decisions/outbox.js';
import {
  type FinalOutcome,
  openParked,
  type ParkedBlob,
  parkedExpiry,
  sealParked,
  unknownParkedKey,
} from '../decisions/parked.js';
import type { DecisionsPort } from '../decisions/port.js';
import { auditOperatorAction } from './auditAction.js';
import type { OperatorRequest } from './types.js';

/** What refusals of a terminate name. */
const TERMINATE = 'baton runs terminate';

/** Why a run that is no longer waiting was not terminated: how it ended, and what it said. */
function ended(core: DecisionsPort, row: ParkedRequest, meanwhile: boolean): string {
  const said = finalText(core, row);
  const how = row.status === 'terminated' ? 'was terminated' : `ended (${row.status})`;
  return `Not terminated: run ${row.id} ${how}${meanwhile ? ' first' : ' already'}${said ? `: ${said}` : '.'}`;
}

/** End a waiting run whatever its flow says (see `OperatorTools.terminate`). */
export async function terminateRun(core: DecisionsPort, request: OperatorRequest): Promise<RoundOutcome> {
  const { codec } = core;
  const ledger = core.ledger;
  const { id, operator, reason } = request;
  if (!ledger) return refuse(TERMINATE, 'There is no ledger to end runs in.');
  const row = await ledger.requests.getRequest(id);
  if (!row) return refuse(TERMINATE, `There is no run ${id}.`);
  const no = (message: string) => refuse(TERMINATE, message, row);
  if (row.status !== 'waiting') return no(ended(core, row, false));
  const blob = openParked(codec, row);
  if (!blob) {
    const key = unknownParkedKey(codec, row);
    return no(`Run ${id} cannot be read with these keys${key ? `: it was ${key}` : ''}. Nothing changed.`);
  }
  const started = core.now();
  const final: FinalOutcome = { type: 'error', message: `Terminated by an operator: ${reason}` };
  const ending: ParkedBlob = { ...blob, r: blob.r + 1, o: final };
  const written = await ledger.requests.parkRequest(
    {
      id,
      flow: row.flow,
      requester: row.requester,
      requesterName: row.requesterName,
      status: 'terminated',
      waitingFor: [],
      state: sealParked(codec, id, row.flow, ending),
      now: started,
      expiresAt: parkedExpiry(started, null),
      dueAt: null,
      // The end is announced like any other (`request.ended`, status `terminated`).
      outbox: outboxMessages(core, {
        flow: row.flow,
        fid: id,
        round: ending.r,
        requesterPrincipal: blob.b.p,
        status: 'terminated',
        before: row.status,
        awaitedBefore: row.waitingFor.map((w) => w.key),
        awaited: [],
        made: [],
        notifications: [],
      }),
    },
    row.version,
  );
  if (written.status === 'conflict') {
    const now = await ledger.requests.getRequest(id);
    if (!now) return no(`Not terminated: run ${id} is gone.`);
    if (now.status !== 'waiting') return no(ended(core, now, true));
    return no(
      `Not terminated: run ${id} was written meanwhile (version ${now.version}, a decision or another operator came first) and still waits. Nothing changed; look again and retry.`,
    );
  }
  await ledger.decisions
    .closeDecisions(id, core.now())
    .catch((error: unknown) => core.log({ type: 'flow_error', flow: row.flow, fid: id, error }));
  await auditOperatorAction(core, {
    row,
    blob,
    round: ending.r,
    started,
    operator,
    state: blob.s.s[0],
    outcome: 'error',
    message: reason,
  });
  return {
    type: 'complete',
    flow: row.flow,
    fid: id,
    round: ending.r,
    result: {
      content: [{ type: 'text', text: `Terminated: run ${id} (${row.flow}). ${final.message}` }],
      structuredContent: { status: 'terminated', id },
    },
  };
}
