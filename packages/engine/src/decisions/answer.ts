/**
 * The one-shot decision entry, beside `baton_decide`'s two MRTR rounds, for
 * callers that already hold the answer: the HTTP decision API and the
 * signed-in decision page. `describeDecision` shows a pending decision the
 * caller may make as data (message, flow, requester, deadline, arguments where
 * the flow allows values, the form's schema, the decisions already made);
 * `answerDecision` validates an answer against that schema and records it with
 * the same checks, compare-and-set, hook, audit entry and outbox as
 * `baton_decide` (`deciding.ts` holds all of that once), audited with the
 * channel it came through. With an idempotency key, the attempt goes through
 * the single-use protocol of requestStates (`round/singleUse.ts`): the key,
 * hashed with the caller and the request, is redeemed in the ledger like a
 * state's jti and the result recorded as its outcome, so a retry answers the
 * same on any instance and is recorded once. A schema error is answered before
 * redemption and kept nowhere: the same key may carry the corrected answer.
 */

import type { Flow } from '../authoring/flowTypes.js';
import type { DecisionSpec } from '../authoring/inputs/decision.js';
import type { ParkedRequest } from '../contract/ledger.js';
import type { RoundOutcome } from '../contract/outcome.js';
import { InvalidRequestStateError, RoundInProgressError } from '../errors.js';
import { redactArgs } from '../inspection/inspector.js';
import { readAnswers } from '../round/body.js';
import { checkRoundInput } from '../round/clientInput.js';
import { redeemOnce } from '../round/singleUse.js';
import { load } from './access.js';
import { chooseDecision, DECIDE_TOOL, DECISION_KEY, decidedBy, recordChosen, refusal } from './deciding.js';
import { type DelegatedCaller, delegatedFor, handoverView, withAbsences } from './delegation.js';
import type { DecisionsPort } from './port.js';
import { quorumStatus, readVotes } from './quorum.js';
import type {
  AnswerDecisionRequest,
  AnswerDecisionResult,
  DecisionRefusal,
  DescribeDecisionRequest,
  DescribeDecisionResult,
} from './types.js';

/** What an idempotency key may be: printable ASCII, 1 to 255 characters. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** How long a recorded result answers a retry of the same idempotency key, ms. */
const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

type Loaded = Exclude<Awaited<ReturnType<typeof load>>, { refusal: unknown }>;

type Opened =
  | { readonly ok: true; readonly loaded: Loaded }
  | { readonly ok: false; readonly refusal: DecisionRefusal };

/** The request and its flow, or a refusal; a malformed `key` is an unknown decision. */
async function open(core: DecisionsPort, id: unknown, key: unknown): Promise<Opened> {
  if (key !== undefined && (typeof key !== 'string' || !DECISION_KEY.test(key))) {
    return { ok: false, refusal: refusal('unknown', 'There is no decision with that key.') };
  }
  const loaded = await load(core, DECIDE_TOOL, id);
  if ('refusal' in loaded) return { ok: false, refusal: refusal(loaded.reason!, loaded.refusal!.message) };
  return { ok: true, loaded };
}

/** See `DecisionTools.describeDecision`. */
export async function describeDecision(
  core: DecisionsPort,
  request: DescribeDecisionRequest,
): Promise<DescribeDecisionResult> {
  const { key } = request;
  const opened = await open(core, request.id, key);
  if (!opened.ok) return opened.refusal;
  const context = await withAbsences(core, request.context);
  const { ledger, row, flow, blob } = opened.loaded;
  const records = await ledger.decisions.listDecisions({ id: row.id });
  const votes = await readVotes(core, flow, row.id);
  const chosen = chooseDecision(core, row, flow, blob, records, key, context, votes);
  if ('refusal' in chosen) return chosen.refusal;
  const { record } = chosen;
  const quorum = quorumStatus(core, flow, votes, record.key, context);
  const spec = flow.inputs[record.key] as DecisionSpec;
  const sensitive = (flow.sensitive ?? []).map((path) => path.split('.'));
  return {
    status: 'pending',
    decision: {
      id: row.id,
      key: record.key,
      flow: flow.name,
      message: record.message,
      ...(record.role === null ? {} : { role: record.role }),
      requestedAt: record.requestedAt,
      ...(record.deadline === null ? {} : { deadline: record.deadline }),
      requester: row.requesterName ?? row.requester,
      ...(flow.auditValues ? { arguments: redactArgs(blob.b.a, sensitive) } : {}),
      requestedSchema: spec.requestedSchema,
      decided: records
        .filter((r) => r.status === 'decided')
        .sort((a, b) => (a.decidedAt ?? 0) - (b.decidedAt ?? 0))
        .map((r) => decidedBy(core, r, context)),
      ...(quorum ? { quorum } : {}),
      ...(chosen.onBehalfOf ? { delegated: delegatedFor(chosen.onBehalfOf) } : {}),
      ...handoverView(record),
    },
  };
}

/** See `DecisionTools.answerDecision`. */
export async function answerDecision(
  core: DecisionsPort,
  request: AnswerDecisionRequest,
): Promise<AnswerDecisionResult> {
  const { key, idempotencyKey } = request;
  const context = await withAbsences(core, request.context);
  const raw = readAnswers({ decision: request.answer }, ['decision']).decision;
  checkRoundInput(key === undefined ? { id: request.id } : { id: request.id, key }, { decision: raw });
  const via = request.channel === 'page' ? 'decide_page' : request.channel === 'app' ? 'app' : 'decide_api';
  if (idempotencyKey !== undefined && (typeof idempotencyKey !== 'string' || !IDEMPOTENCY_KEY.test(idempotencyKey))) {
    return refusal('key_reused', 'An Idempotency-Key is 1 to 255 printable ASCII characters.');
  }
  const opened = await open(core, request.id, key);
  if (!opened.ok) return opened.refusal;
  if (idempotencyKey === undefined) return answerNow(core, opened.loaded, key, context, raw, via);

  // A schema error is answered before anything is redeemed: nothing is kept under the key.
  const { ledger, row, flow, blob } = opened.loaded;
  const records = await ledger.decisions.listDecisions({ id: row.id });
  const chosen = chooseDecision(core, row, flow, blob, records, key, context, await readVotes(core, flow, row.id));
  if (!('refusal' in chosen)) {
    const parsed = (flow.inputs[chosen.record.key] as DecisionSpec).parseAnswer(raw);
    if (!parsed.ok) return invalid(row.id, chosen.record.key, parsed.problem, parsed.issues);
  }
  const started = core.now();
  const jti = core.codec.digest([context.principal, row.id, idempotencyKey], 'decision-idempotency');
  try {
    const outcome = await redeemOnce(
      core.singleUse,
      {
        flow,
        fid: row.id,
        round: 0,
        claims: { jti, exp: started + IDEMPOTENCY_TTL_MS },
        // The retry digest covers the decision asked for and the answer: another answer is `key_reused`.
        answers: readAnswers({ key: key ?? null, decision: raw }),
        sized: {},
        started,
        parks: true,
      },
      async () => {
        // Read again: a retry may have been held while the request moved on.
        const again = await open(core, row.id, key);
        const result = again.ok ? await answerNow(core, again.loaded, key, context, raw, via) : again.refusal;
        return wrap(flow, row, result);
      },
    );
    return unwrap(outcome);
  } catch (error) {
    if (error instanceof RoundInProgressError) {
      return refusal(
        'in_progress',
        'An answer under this Idempotency-Key is still being recorded: try again in a moment.',
        { retryAfterMs: error.retryAfterMs },
      );
    }
    if (error instanceof InvalidRequestStateError && error.reason === 'replayed') {
      return refusal(
        'key_reused',
        'This Idempotency-Key was used before for another answer (or its first attempt was lost): use a new key.',
      );
    }
    throw error;
  }
}

/** Choose, validate and record (no idempotency key, or inside its redemption). */
async function answerNow(
  core: DecisionsPort,
  loaded: Loaded,
  key: string | undefined,
  caller: DelegatedCaller,
  raw: unknown,
  via: 'decide_api' | 'decide_page' | 'app',
): Promise<AnswerDecisionResult> {
  const { ledger, row, flow, blob } = loaded;
  const records = await ledger.decisions.listDecisions({ id: row.id });
  const chosen = chooseDecision(core, row, flow, blob, records, key, caller, await readVotes(core, flow, row.id));
  if ('refusal' in chosen) return chosen.refusal;
  const chosenKey = chosen.record.key;
  const parsed = (flow.inputs[chosenKey] as DecisionSpec).parseAnswer(raw);
  if (!parsed.ok) return invalid(row.id, chosenKey, parsed.problem, parsed.issues);
  if (parsed.answer.action !== 'accept') {
    return {
      status: 'declined',
      id: row.id,
      key: chosenKey,
      message: `Not recorded: you declined the decision "${chosenKey}" on request ${row.id}. It is still pending.`,
    };
  }
  const recorded = await recordChosen(core, {
    flow,
    row,
    key: chosenKey,
    content: parsed.answer.content,
    caller,
    via,
    ...(chosen.onBehalfOf ? { onBehalfOf: chosen.onBehalfOf } : {}),
  });
  if (recorded.status !== 'recorded') return recorded;
  return {
    status: 'recorded',
    id: row.id,
    key: chosenKey,
    flow: flow.name,
    message: `Recorded ${chosenKey} on request ${row.id} (${flow.name}). ${recorded.next}`,
    next: recorded.next,
  };
}

function invalid(
  id: string,
  key: string,
  problem: string,
  issues: readonly { field: string; hint: string }[] | undefined,
): AnswerDecisionResult {
  return {
    status: 'invalid',
    id,
    key,
    message: `Your answer was not accepted (${problem}). Please answer again.`,
    problem,
    issues: issues ?? [{ field: 'answer', hint: problem }],
  };
}

/** A result as the outcome the ledger records for the idempotency key (sealed like a round's). */
function wrap(flow: Flow, row: ParkedRequest, result: AnswerDecisionResult): RoundOutcome {
  return {
    type: 'complete',
    flow: flow.name,
    fid: row.id,
    round: 0,
    result: { content: [{ type: 'text', text: result.message }], structuredContent: { answer: result } },
  };
}

/** The result recorded for the idempotency key. */
function unwrap(outcome: RoundOutcome): AnswerDecisionResult {
  const answer =
    outcome.type === 'complete'
      ? (outcome.result.structuredContent as { answer?: AnswerDecisionResult } | undefined)?.answer
      : undefined;
  return answer ?? refusal('unavailable', outcome.type === 'error' ? outcome.message : 'The answer was not recorded.');
}
