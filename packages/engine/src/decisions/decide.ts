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
import type { DecisionSpec } from '../authoring/inputs/decision.js';
import type { StateBinding } from '../codec/types.js';
import type { DecisionRecord, ParkedRequest, VoteRecord } from '../contract/ledger.js';
import type { ErrorOutcome, RoundOutcome } from '../contract/outcome.js';
import type { WireInputRequest } from '../contract/wire.js';
import { readAnswers } from '../round/body.js';
import { checkRoundInput } from '../round/clientInput.js';
import { openClaims, redeemOnce, rejectState } from '../round/singleUse.js';
import { load, refuse } from './access.js';
import { chooseDecision, DECIDE_TOOL, DECISION_KEY, notRecorded, recordChosen } from './deciding.js';
import { type Authority, type DelegatedCaller, withAbsences } from './delegation.js';
import type { ParkedBlob } from './parked.js';
import type { DecisionsPort } from './port.js';
import { readVotes } from './quorum.js';
import type { DecideRequest, DecisionCaller } from './types.js';

export { DECIDE_TOOL };

/** The decision the caller makes on this request, or a refusal (a tool error) saying why not. */
function choose(
  core: DecisionsPort,
  row: ParkedRequest,
  flow: Flow,
  blob: ParkedBlob,
  records: readonly DecisionRecord[],
  key: string | undefined,
  caller: DelegatedCaller,
  votes: readonly VoteRecord[],
): { record: DecisionRecord; onBehalfOf?: Authority } | { refusal: ErrorOutcome } {
  const chosen = chooseDecision(core, row, flow, blob, records, key, caller, votes);
  return 'refusal' in chosen ? { refusal: refuse(DECIDE_TOOL, chosen.refusal.message, row) } : chosen;
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
  const { id, key } = request;
  checkRoundInput(key === undefined ? { id } : { id, key }, request.inputResponses);
  if (key !== undefined && (typeof key !== 'string' || !DECISION_KEY.test(key))) {
    return refuse(DECIDE_TOOL, 'There is no decision with that key.');
  }
  const context = await withAbsences(core, request.context);
  const loaded = await load(core, DECIDE_TOOL, id);
  if ('refusal' in loaded) return loaded.refusal!;
  const { ledger, row, flow, blob } = loaded;
  const binding = decideBinding(context, flow.name, row.id, key);

  if (request.requestState === undefined) {
    const records = await ledger.decisions.listDecisions({ id: row.id });
    const chosen = choose(core, row, flow, blob, records, key, context, await readVotes(core, flow, row.id));
    if ('refusal' in chosen) return chosen.refusal;
    if (context.capabilities !== undefined && context.capabilities.form !== true) {
      return {
        ...refuse(
          DECIDE_TOOL,
          'Deciding needs form elicitation, which the client did not declare in its capabilities.',
          row,
        ),
        undeclared: { key: 'decision', kind: 'form' },
      };
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
  context: DelegatedCaller,
): Promise<RoundOutcome> {
  const ledger = core.ledger!;
  const base = { flow: flow.name, fid: row.id, round };
  const error = (message: string): RoundOutcome => ({ type: 'error', ...base, message });
  // Still allowed? The request may have ended or the caller lost the role since the first round.
  const records = await ledger.decisions.listDecisions({ id: row.id });
  if (records.some((r) => r.key === key && r.status === 'decided')) {
    // Another decider's answer was recorded since this caller was asked (the race is lost).
    return error(`The decision "${key}" on request ${row.id} was made by someone else first; yours was not recorded.`);
  }
  if (row.status !== 'waiting') return error(notRecorded(row.id, key, row.status).message);
  if (records.some((r) => r.key === key && r.status === 'closed')) {
    // Its request ended since it was read (withdrawn, say): say what ended it.
    const ended = await ledger.requests.getRequest(row.id);
    return error(notRecorded(row.id, key, ended?.status).message);
  }
  const chosen = choose(core, row, flow, blob, records, key, context, await readVotes(core, flow, row.id));
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
  const recorded = await recordChosen(core, {
    flow,
    row,
    key,
    content: parsed.answer.content,
    caller: context,
    via: 'decide',
    ...(chosen.onBehalfOf ? { onBehalfOf: chosen.onBehalfOf } : {}),
  });
  if (recorded.status !== 'recorded') return error(recorded.message);
  return {
    type: 'complete',
    ...base,
    result: {
      content: [{ type: 'text', text: `Recorded ${key} on request ${row.id} (${flow.name}). ${recorded.next}` }],
      structuredContent: { status: 'recorded', id: row.id, key },
    },
  };
}
