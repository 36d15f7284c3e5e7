/**
 * Deciding: the `decide` tool's two MRTR rounds. The first call chooses the
 * decision the caller makes on a request (refusing, with a sentence, a
 * requester deciding their own request (four eyes), a wrong role, an unknown,
 * decided, closed or expired decision, an ended request, or several possible
 * decisions and no `key`) and asks for it as a form elicitation under the key
 * `decision`, with a requestState bound to the caller, the tool and its
 * arguments. The retry opens and redeems that state once, checks the caller
 * may still decide, validates the answer (asking again saying why), records
 * it once, tells `onDecided` and advances the parked flow at once; its
 * outcome is sealed in the ledger so a retry of the same state answers alike.
 */

import type { Flow } from '../authoring/flowTypes.js';
import { type DecisionSpec, isDecision } from '../authoring/inputs/decision.js';
import type { StateBinding } from '../codec/types.js';
import type { DecisionRecord, ParkedRequest, RecordDecisionResult, RequestStatus } from '../contract/ledger.js';
import type { ErrorOutcome, RoundOutcome } from '../contract/outcome.js';
import type { WireInputRequest } from '../contract/wire.js';
import { isLedgerUnavailable } from '../errors.js';
import { readAnswers } from '../round/body.js';
import { checkRoundInput } from '../round/clientInput.js';
import { openClaims, redeemOnce, rejectState } from '../round/singleUse.js';
import { allowed, load, refuse } from './access.js';
import { advance, aftermath, finalText } from './advance.js';
import { isRequester, type ParkedBlob, principalHash, sealDecision } from './parked.js';
import { callHook, type DecisionsPort } from './port.js';
import type { DecideRequest, DecisionCaller } from './types.js';

/** The decide tool's name: decide states are bound to it. */
export const DECIDE_TOOL = 'baton_decide';

const KEY = /^[A-Za-z0-9_.-]{1,64}$/;

const ENDED: Record<Exclude<RequestStatus, 'waiting'>, (id: string) => string> = {
  completed: (id) => `Request ${id} has ended: there is nothing left to decide.`,
  expired: (id) => `Request ${id} expired: its decisions can no longer be made.`,
  withdrawn: (id) => `Request ${id} was withdrawn by its requester: there is nothing left to decide.`,
  terminated: (id) => `Request ${id} was ended by an operator: there is nothing left to decide.`,
};

/** How many times a decision is checked and recorded again while its request keeps changing. */
const MAX_RECORD_ATTEMPTS = 8;

/** The refusal of a submitted decision whose request ended first (withdrawn, expired, completed). */
function notRecorded(id: string, key: string, status: RequestStatus | undefined): string {
  const what =
    status === 'withdrawn'
      ? 'was withdrawn first, by its requester'
      : status === 'expired'
        ? 'expired first'
        : 'ended first';
  return `Not recorded: request ${id} ${what}. Your decision "${key}" was not recorded.`;
}

/** The decision the caller makes on this request, or a refusal saying why not. */
function choose(
  core: DecisionsPort,
  row: ParkedRequest,
  flow: Flow,
  blob: ParkedBlob,
  records: readonly DecisionRecord[],
  key: string | undefined,
  caller: DecisionCaller,
): { record: DecisionRecord } | { refusal: ErrorOutcome } {
  const { codec } = core;
  const id = row.id;
  const now = core.now();
  const no = (message: string) => ({ refusal: refuse(DECIDE_TOOL, message, row) });
  if (row.status !== 'waiting') return no(ENDED[row.status](id));
  if (isRequester(codec, blob, caller.principal)) {
    return no(`You requested ${id}, so you cannot decide it: a requester never decides their own request (four eyes).`);
  }
  const expired = (r: DecisionRecord) => r.deadline !== null && r.deadline <= now;
  // A pending decision the request no longer awaits (escalated elsewhere) cannot be made.
  const decisionKey = (r: DecisionRecord) =>
    isDecision(flow.inputs[r.key]) && (r.status !== 'pending' || row.waitingFor.some((w) => w.key === r.key));
  if (key !== undefined) {
    const record = records.find((r) => r.key === key);
    if (!record || !decisionKey(record)) return no(`Request ${id} has no decision "${key}".`);
    if (record.status === 'decided') return no(`The decision "${key}" on request ${id} has already been made.`);
    if (record.status === 'closed')
      return no(`The decision "${key}" on request ${id} is closed: the request ended first.`);
    if (expired(record)) return no(`The decision "${key}" on request ${id} expired: it can no longer be made.`);
    const may = allowed(flow, blob, key, caller);
    if (may !== true) return no(`You may not make the decision "${key}" on request ${id}: ${may}.`);
    return { record };
  }
  const pending = records.filter((r) => r.status === 'pending' && decisionKey(r));
  const open = pending.filter((r) => !expired(r));
  const mine = open.filter((r) => allowed(flow, blob, r.key, caller) === true);
  if (mine.length === 1) return { record: mine[0]! };
  if (mine.length > 1) {
    return no(
      `You may make more than one decision on request ${id} (${mine.map((r) => r.key).join(', ')}): say which with "key".`,
    );
  }
  if (open.length > 0) {
    const why = open.map((r) => `"${r.key}": ${allowed(flow, blob, r.key, caller)}`).join('; ');
    return no(`You may not make the pending decisions on request ${id} (${why}).`);
  }
  if (pending.length > 0) return no(`The decisions on request ${id} expired: they can no longer be made.`);
  if (records.some((r) => r.status === 'decided')) return no(`The decisions on request ${id} have already been made.`);
  return no(`Request ${id} awaits no decision right now.`);
}

function decideBinding(caller: DecisionCaller, flow: string, id: string, key: string | undefined): StateBinding {
  return {
    principal: caller.principal,
    flow,
    method: 'tools/call',
    target: DECIDE_TOOL,
    args: key === undefined ? { id } : { id, key },
  };
}

/** The decider's form under the key `decision`, with a note when asked again. */
function askDecision(
  core: DecisionsPort,
  flow: Flow,
  row: ParkedRequest,
  record: DecisionRecord,
  binding: StateBinding,
  round: number,
  note?: string,
): RoundOutcome {
  const { codec } = core;
  const spec = flow.inputs[record.key] as DecisionSpec;
  const message = note ? `${note}\n\n${record.message}` : record.message;
  const request: WireInputRequest = {
    method: 'elicitation/create',
    params: { mode: 'form', message, requestedSchema: spec.requestedSchema },
  };
  const { token } = codec.mint(
    binding,
    { fid: row.id, hash: flow.hash, round, body: { k: record.key } },
    { ttlSeconds: core.settings.ttlSeconds },
  );
  return {
    type: 'input_required',
    flow: flow.name,
    fid: row.id,
    round,
    inputRequests: { decision: request },
    requestState: token,
  };
}
/** The `decide` tool: ask for the decision, or record the answer and advance the flow. */
export async function decide(core: DecisionsPort, request: DecideRequest): Promise<RoundOutcome> {
  const { log } = core;
  const { id, key, context } = request;
  checkRoundInput(key === undefined ? { id } : { id, key }, request.inputResponses);
  if (key !== undefined && (typeof key !== 'string' || !KEY.test(key))) {
    return refuse(DECIDE_TOOL, 'There is no decision with that key.');
  }
  const loaded = await load(core, DECIDE_TOOL, id);
  if ('refusal' in loaded) return loaded.refusal!;
  const { ledger, row, flow, blob } = loaded;
  const binding = decideBinding(context, flow.name, row.id, key);

  if (request.requestState === undefined) {
    const chosen = choose(core, row, flow, blob, await ledger.listDecisions({ id: row.id }), key, context);
    if ('refusal' in chosen) return chosen.refusal;
    if (context.capabilities !== undefined && context.capabilities.form !== true) {
      return refuse(
        DECIDE_TOOL,
        'Deciding needs form elicitation, which the client did not declare in its capabilities.',
        row,
      );
    }
    return askDecision(core, flow, row, chosen.record, binding, 1);
  }

  // The retry: open, check and redeem the state before anything is recorded (`round/singleUse.ts`).
  const started = core.now();
  const claims = openClaims(core.singleUse, flow.name, request.requestState, binding);
  const chosenKey = (claims.body as { k?: unknown } | null)?.k;
  if (claims.fid !== row.id || typeof chosenKey !== 'string' || claims.hash !== flow.hash) {
    rejectState(log, flow.name, 'bad_snapshot', 'not a decide state for this request');
  }
  const answers = readAnswers(request.inputResponses, ['decision']);
  return redeemOnce(
    core.singleUse,
    {
      flow,
      fid: row.id,
      round: claims.round + 1,
      claims,
      answers,
      sized: { [chosenKey]: answers.decision },
      started,
      parks: true,
    },
    () => record(core, flow, row, blob, chosenKey, binding, claims.round + 1, answers.decision, context),
  );
}

/** The decide retry after redemption: validate, record once, tell `onDecided`, advance the flow. */
async function record(
  core: DecisionsPort,
  flow: Flow,
  row: ParkedRequest,
  blob: ParkedBlob,
  key: string,
  binding: StateBinding,
  round: number,
  raw: unknown,
  context: DecisionCaller,
): Promise<RoundOutcome> {
  const { codec } = core;
  const ledger = core.ledger!;
  const base = { flow: flow.name, fid: row.id, round };
  // Still allowed? The request may have ended or the caller lost the role since the first round.
  const records = await ledger.listDecisions({ id: row.id });
  if (records.some((r) => r.key === key && r.status === 'decided')) {
    // Another decider's answer was recorded since this caller was asked (the race is lost).
    return {
      type: 'error',
      ...base,
      message: `The decision "${key}" on request ${row.id} was made by someone else first; yours was not recorded.`,
    };
  }
  if (row.status !== 'waiting') return { type: 'error', ...base, message: notRecorded(row.id, key, row.status) };
  if (records.some((r) => r.key === key && r.status === 'closed')) {
    // Its request ended since it was read (withdrawn, say): say what ended it.
    const ended = await ledger.getRequest(row.id);
    return { type: 'error', ...base, message: notRecorded(row.id, key, ended?.status) };
  }
  const chosen = choose(core, row, flow, blob, records, key, context);
  if ('refusal' in chosen) return { ...chosen.refusal, round };
  const spec = flow.inputs[key] as DecisionSpec;
  if (raw === undefined)
    return askDecision(core, flow, row, chosen.record, binding, round, 'Please answer the decision form.');
  const parsed = spec.parseAnswer(raw);
  if (!parsed.ok) {
    return askDecision(
      core,
      flow,
      row,
      chosen.record,
      binding,
      round,
      `Your previous answer was not accepted (${parsed.problem}). Please answer again.`,
    );
  }
  if (parsed.answer.action !== 'accept') {
    const what = parsed.answer.action === 'decline' ? 'you declined' : 'you cancelled';
    return {
      type: 'complete',
      ...base,
      result: {
        content: [
          {
            type: 'text',
            text: `Not recorded: ${what} the decision "${key}" on request ${row.id}. It is still pending.`,
          },
        ],
      },
    };
  }
  const decidedAt = core.now();
  const sealed = sealDecision(
    codec,
    row.id,
    key,
    context.principal,
    parsed.answer.content,
    core.decisions.storePrincipalNames,
  );
  // One compare-and-set on the request's version, with the decision: a withdrawal, a timer or
  // another decision that wrote the request since it was read makes this one read it again.
  let current = row;
  let recorded: RecordDecisionResult | undefined;
  for (let attempt = 0; attempt < MAX_RECORD_ATTEMPTS; attempt++) {
    recorded = await ledger.recordDecision({
      id: row.id,
      key,
      ...sealed,
      now: decidedAt,
      expectedVersion: current.version,
    });
    if (recorded.status !== 'conflict') break;
    const again = await load(core, DECIDE_TOOL, row.id);
    if ('refusal' in again) return { ...again.refusal!, round };
    if (again.row.status !== 'waiting') break;
    const rechecked = choose(
      core,
      again.row,
      flow,
      again.blob,
      await ledger.listDecisions({ id: row.id }),
      key,
      context,
    );
    if ('refusal' in rechecked) return { ...rechecked.refusal, round };
    current = again.row;
  }
  if (recorded?.status !== 'recorded') {
    const ended =
      recorded?.status === 'closed' || recorded?.status === 'conflict' ? await ledger.getRequest(row.id) : undefined;
    const why = {
      already_decided: `The decision "${key}" on request ${row.id} was made by someone else first; yours was not recorded.`,
      closed: notRecorded(row.id, key, ended?.status),
      conflict:
        ended && ended.status !== 'waiting'
          ? notRecorded(row.id, key, ended.status)
          : `Not recorded: request ${row.id} kept changing while your decision "${key}" was recorded. Decide again in a moment.`,
      expired: `The decision "${key}" on request ${row.id} expired before your answer arrived; it was not recorded.`,
      unknown: `Request ${row.id} has no decision "${key}".`,
    }[recorded?.status ?? 'conflict'];
    return { type: 'error', ...base, message: why };
  }
  const decider = core.decisions.hookPrincipals === 'id' ? context.principal : principalHash(codec, context.principal);
  callHook(core, 'onDecided', core.decisions.onDecided, { id: row.id, key, flow: flow.name, decider, decidedAt });
  // The decision is recorded (acknowledged): a ledger outage while advancing the flow only delays
  // it, since the next round of the request (requester, resume, another decision) delivers it.
  let result: Awaited<ReturnType<typeof advance>>;
  try {
    result = await advance(core, flow, row.id, context.principal, 'decide');
  } catch (error) {
    if (!isLedgerUnavailable(error)) throw error;
    core.log({ type: 'flow_error', flow: flow.name, fid: row.id, error });
    result = undefined;
  }
  let next = aftermath(row.id, result);
  if (!result) {
    // Someone else's round delivered it (the requester's, a withdrawal's): say how the flow ended.
    const after = await ledger.getRequest(row.id).catch(() => undefined);
    if (after && after.status !== 'waiting') {
      const said = finalText(core, after);
      next = `The flow has ended${said ? `: ${said}` : ` (${after.status}).`}`;
    }
  }
  return {
    type: 'complete',
    ...base,
    result: {
      content: [{ type: 'text', text: `Recorded ${key} on request ${row.id} (${flow.name}). ${next}` }],
      structuredContent: { status: 'recorded', id: row.id, key },
    },
  };
}
