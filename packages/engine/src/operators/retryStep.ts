/**
 * An operator's retry of a durable step whose retries ran out. A run parked
 * while a step ran past its round (its body persists the running invocation,
 * `r`) stays waiting on that step; when the step then fails for good, its
 * record says `failed` and the next round would deliver the failure to the
 * flow. Before anyone plays that round, an operator who fixed the cause may
 * run the step again: the step's record is reopened first (`LedgerSteps.reopenStep`:
 * only while it is `failed`, so of two operators one reopens it), then the run
 * is rewritten due at once for the scheduler (one compare-and-set on the
 * version read). In that order no round can find the run due while its step
 * still reads `failed` (and take the failure the operator meant to retry).
 * When the rewrite loses to another write, the run is read again: still
 * waiting on the step, the rewrite is tried again on the new version (a few
 * times); ended or moved past the step, the retry says so, and the reopened
 * record is left to nobody (no round of the run claims that invocation any
 * more), so it is harmless. The next round, on any server, claims the
 * invocation under its old key and runs it with fresh attempts, under the
 * same idempotency key. Audited `via: 'operator'` with the operator and the
 * reason. The flow's code is never run here: only the keys.
 */
import type { ParkedRequest } from '../contract/ledger.js';
import type { RoundOutcome } from '../contract/outcome.js';
import { refuse } from '../decisions/access.js';
import { finalText } from '../decisions/advance.js';
import { openParked, type ParkedBlob, sealParked, unknownParkedKey } from '../decisions/parked.js';
import type { DecisionsPort } from '../decisions/port.js';
import { auditOperatorAction } from './auditAction.js';
import type { RetryStepRequest } from './types.js';

/** What refusals of a retry name. */
const RETRY = 'baton runs retry-step';

/** Why a run that is no longer waiting was not retried. */
function ended(core: DecisionsPort, row: ParkedRequest, meanwhile: boolean): string {
  const said = finalText(core, row);
  return `Not retried: run ${row.id} ended (${row.status})${meanwhile ? ' first' : ' already'}${said ? `: ${said}` : '.'}`;
}

/** The invocation key `step` names in a body whose settled counts are `counts`: `charge` is `charge#<settled>`. */
function invocationKey(step: string, counts: Readonly<Record<string, number>> | undefined): string {
  if (/#\d+$/.test(step)) return step;
  return `${step}#${counts?.[step] ?? 0}`;
}

/** Run a failed durable step of a waiting run again (see `OperatorTools.retryStep`). */
export async function retryStepRun(core: DecisionsPort, request: RetryStepRequest): Promise<RoundOutcome> {
  const { codec } = core;
  const ledger = core.ledger;
  const { id, operator, reason } = request;
  if (!ledger) return refuse(RETRY, 'There is no ledger to retry steps in.');
  const row = await ledger.requests.getRequest(id);
  if (!row) return refuse(RETRY, `There is no run ${id}.`);
  const no = (message: string) => refuse(RETRY, message, row);
  if (row.status !== 'waiting') return no(ended(core, row, false));
  const blob = openParked(codec, row);
  if (!blob) {
    const key = unknownParkedKey(codec, row);
    return no(`Run ${id} cannot be read with these keys${key ? `: it was ${key}` : ''}. Nothing changed.`);
  }
  const body = blob.s;
  const key = invocationKey(request.step, body.k);
  const [stepId, n] = [key.slice(0, key.lastIndexOf('#')), Number(key.slice(key.lastIndexOf('#') + 1))];
  const waitsOn = row.waitingFor.map((w) => w.key);
  if (body.r === undefined) {
    return no(
      `Not retried: run ${id} does not wait on a durable step${waitsOn.length > 0 ? ` (it waits for ${waitsOn.join(', ')})` : ''}. Nothing changed.`,
    );
  }
  const record = n >= (body.k?.[stepId] ?? 0) ? await ledger.steps.getStep(id, key) : undefined;
  if (!record) return no(`Not retried: run ${id} does not wait on step ${key}. Nothing changed.`);
  if (record.status !== 'failed') {
    const how =
      record.status === 'running' ? 'it is still running' : 'it succeeded (the run takes its result on its next round)';
    return no(`Not retried: step ${key} of run ${id} has not failed: ${how}. Nothing changed.`);
  }

  const started = core.now();
  // Reopened first: from the rewrite on, any round that finds the run due finds its step open.
  if (!(await ledger.steps.reopenStep(id, key, started))) {
    return no(`Not retried: step ${key} of run ${id} was reopened or recorded meanwhile, by another operator.`);
  }
  let [current, opened] = [row, blob];
  let next: ParkedBlob = { ...opened, r: opened.r + 1 };
  for (let attempt = 1; ; attempt++) {
    next = { ...opened, r: opened.r + 1 };
    const written = await ledger.requests.parkRequest(
      {
        id,
        flow: current.flow,
        requester: current.requester,
        requesterName: current.requesterName,
        status: 'waiting',
        waitingFor: current.waitingFor,
        state: sealParked(codec, id, current.flow, next),
        now: started,
        expiresAt: current.expiresAt,
        // Due now: a server's scheduler plays the next round at once, which runs the step.
        dueAt: started,
      },
      current.version,
    );
    if (written.status !== 'conflict') break;
    const now = await ledger.requests.getRequest(id);
    if (!now) return no(`Not retried: run ${id} is gone.`);
    if (now.status !== 'waiting') return no(ended(core, now, true));
    const reread = openParked(codec, now);
    const stillWaits = reread?.s.r !== undefined && n >= (reread.s.k?.[stepId] ?? 0);
    if (!reread || !stillWaits) {
      return no(
        `Not retried: run ${id} moved on meanwhile (version ${now.version}: its next round came first and took step ${key}'s outcome). Look again with baton runs show.`,
      );
    }
    if (attempt >= 3) {
      return no(
        `Not retried: run ${id} kept being written meanwhile (version ${now.version}). Step ${key} is reopened: the run's next round runs it; look again with baton runs show.`,
      );
    }
    [current, opened] = [now, reread];
  }
  await auditOperatorAction(core, {
    row: current,
    blob: opened,
    round: next.r,
    started,
    operator,
    state: opened.s.s[0],
    outcome: 'input_required',
    message: `retry-step ${key}: ${reason}`,
  });
  return {
    type: 'complete',
    flow: row.flow,
    fid: id,
    round: next.r,
    result: {
      content: [
        {
          type: 'text',
          text: `Retrying: step ${key} of run ${id} (${row.flow}) runs again with the same idempotency key, on the next round (a server's scheduler plays it within about a second; else the requester's baton_resume).`,
        },
      ],
      structuredContent: { status: 'retrying', id, step: key },
    },
  };
}
