/**
 * The decision tools' transport-free API, offered by every runner: `inbox`
 * (the pending decisions a caller may make), `decide` (a two-round MRTR call:
 * one form elicitation under the key `decision`, then the answer recorded
 * once and the parked flow advanced at once), `requests` (the caller's own
 * requests), `resume` (the requester continues a parked flow as its own tool
 * would) and `withdraw`. The adapters map each to an MCP tool
 * (`baton_inbox`, `baton_decide`, `baton_requests`, `baton_resume`,
 * `baton_withdraw`); a refusal is an `error` outcome whose message is a
 * sentence (a tool error, never -32602, which stays for bad requestStates).
 * Four eyes is enforced here: the requester never decides their own request,
 * whatever their roles.
 */
import type { EventObject } from 'xstate';
import type { AuditAnswer } from './audit.js';
import type { RequestStateClaims, StateBinding } from './codec/types.js';
import { callHook, outcomeBinding, type RunnerCore } from './core.js';
import { InvalidRequestStateError } from './errors.js';
import type { Flow, FlowResult } from './flow.js';
import { type DecisionSpec, isDecision, WITHDRAW_EVENT, type WireInputRequest } from './inputs.js';
import { currentBody, recordedDecisions, type Step, step } from './instance.js';
import { checkRoundInput } from './jsonInput.js';
import type { DecisionRecord, ParkedRequest, RequestStatus, WaitingFor } from './ledger.js';
import type { ErrorOutcome, RoundOutcome } from './outcome.js';
import {
  isRequester,
  openParked,
  PARKED_RETENTION_MS,
  type ParkedBlob,
  principalHash,
  requesterBinding,
  sealDecision,
} from './parked.js';
import { readAnswers } from './roundBody.js';
import type { CallContext } from './runner.js';

/** Who calls a decision tool: the principal, its roles, and what the client can be asked. */
export type DecisionCaller = Pick<CallContext, 'principal' | 'roles' | 'capabilities'>;

/** What `onDecisionRequested` receives. Times in ms since epoch. */
export interface DecisionRequestedEvent {
  /** The request id (the flow instance). */
  readonly id: string;
  readonly key: string;
  readonly flow: string;
  /** The role that may decide, when the flow names one. */
  readonly role?: string;
  readonly message: string;
  readonly requestedAt: number;
  readonly deadline?: number;
  /** The requester: a keyed hash, or the id with `hookPrincipals: 'id'`. */
  readonly requester: string;
}

/** What `onDecided` receives. */
export interface DecidedEvent {
  readonly id: string;
  readonly key: string;
  readonly flow: string;
  /** The decider: a keyed hash (the same as requesters'), or the id with `hookPrincipals: 'id'`. */
  readonly decider: string;
  readonly decidedAt: number;
}

/** A pending decision in an inbox (times in ms since epoch). */
export interface InboxItem {
  readonly id: string;
  readonly key: string;
  readonly flow: string;
  readonly message: string;
  readonly requestedAt: number;
  readonly deadline?: number;
}

/** One of the caller's own requests. `waitingFor` is set while `waiting` (empty: it waits on the requester). */
export interface RequestItem {
  readonly id: string;
  readonly flow: string;
  readonly status: RequestStatus;
  readonly waitingFor?: readonly WaitingFor[];
}

/** A `decide` call: without `requestState` it asks; with it, it records. */
export interface DecideRequest {
  readonly id: string;
  /** Needed only when the caller may make more than one pending decision on the request. */
  readonly key?: string;
  readonly context: DecisionCaller;
  readonly requestState?: string;
  readonly inputResponses?: Readonly<Record<string, unknown>>;
}

/** A `resume` call (the requester's). */
export interface ResumeRequest {
  readonly id: string;
  readonly context: DecisionCaller;
  readonly requestState?: string;
  readonly inputResponses?: Readonly<Record<string, unknown>>;
}

/** A `withdraw` call (the requester's). */
export interface WithdrawRequest {
  readonly id: string;
  readonly context: DecisionCaller;
}

/** The decision tools of a runner. */
export interface DecisionTools {
  /**
   * The pending decisions `context` may make: its role matches (or the decision's `may`
   * accepts, on the parked context), not its own request, not past the deadline, not decided.
   * @returns `[{ id, key, flow, message, requestedAt, deadline? }]`, oldest first; `[]` without a ledger.
   */
  inbox(context: DecisionCaller): Promise<InboxItem[]>;
  /**
   * Make a decision: two MRTR rounds.
   * - First call `{ id, key? }`: `input_required` with `inputRequests: { decision: { method:
   *   'elicitation/create', params: { mode: 'form', message, requestedSchema } } }` and a
   *   requestState bound to the caller, `tools/call`, `baton_decide` and `{ id, key? }`.
   * - Retry with `inputResponses: { decision: { action: 'accept', content } }`: the content is
   *   validated (invalid: asked again saying why), recorded once, and the parked flow advanced
   *   at once; `complete` with text starting "Recorded". Decline or cancel: `complete`, "Not recorded: …".
   * - Refusals are `error` outcomes with a sentence: not allowed (own request: four eyes; wrong
   *   role), unknown id, already decided, expired, withdrawn, the flow has ended, or several
   *   decisions possible and no `key` (naming the keys); losing a race is refused on the retry.
   * @throws InvalidRequestStateError for a bad, expired, foreign or replayed requestState.
   */
  decide(request: DecideRequest): Promise<RoundOutcome>;
  /**
   * The caller's own requests updated in the last 30 days, newest first:
   * `[{ id, flow, status: 'waiting' | 'completed' | 'expired' | 'withdrawn', waitingFor? }]`.
   */
  requests(context: DecisionCaller): Promise<RequestItem[]>;
  /**
   * The requester continues a parked flow exactly as the flow's own tool would
   * (`input_required` with requests, "retry later", the complete "waiting" result, or the
   * flow's final result), with a fresh in-call wait. Its states are bound to `baton_resume` and
   * `{ id }`. Anyone else is refused.
   * @throws InvalidRequestStateError for a bad requestState (as the flow's own tool).
   */
  resume(request: ResumeRequest): Promise<RoundOutcome>;
  /**
   * The requester withdraws a waiting request: the flow receives {@link WithdrawEvent}, runs
   * to its end and is parked `withdrawn`; pending decisions are closed. `complete` with text
   * starting "Withdrawn"; refused for anyone else, after the end, or when the flow's state
   * has no withdrawal path.
   */
  withdraw(request: WithdrawRequest): Promise<RoundOutcome>;
}

/** The decide tool's name: decide states are bound to it. */
export const DECIDE_TOOL = 'baton_decide';
/** The resume tool's name: resume states are bound to it. */
export const RESUME_TOOL = 'baton_resume';

const ID = /^[A-Za-z0-9_-]{22}$/;
const KEY = /^[A-Za-z0-9_.-]{1,64}$/;
const MAX_ADVANCE_ATTEMPTS = 8;

/** What the runner lends the decision tools to serve a resume round. */
export interface ResumeServer {
  resume(
    flow: Flow,
    binding: StateBinding,
    context: DecisionCaller,
    requestState: string | undefined,
    inputResponses: Readonly<Record<string, unknown>> | undefined,
    row: ParkedRequest | undefined,
  ): Promise<RoundOutcome>;
}

/** A refusal: an error outcome (a tool error) with a sentence. */
function refuse(tool: string, message: string, row?: Pick<ParkedRequest, 'id' | 'flow'>): ErrorOutcome {
  return { type: 'error', flow: row?.flow ?? tool, fid: row?.id ?? '', round: 0, message };
}

function text(outcome: RoundOutcome): string {
  if (outcome.type === 'error') return outcome.message;
  if (outcome.type !== 'complete') return '';
  return outcome.result.content
    .filter((c): c is { type: 'text'; text: string } => c.type === 'text' && typeof c.text === 'string')
    .map((c) => c.text)
    .join('\n');
}

function resultText(result: FlowResult | undefined): string {
  if (!result) return '';
  return result.content
    .filter((c): c is { type: 'text'; text: string } => c.type === 'text' && typeof c.text === 'string')
    .map((c) => c.text)
    .join('\n');
}

const ENDED: Record<Exclude<RequestStatus, 'waiting'>, (id: string) => string> = {
  completed: (id) => `Request ${id} has ended: there is nothing left to decide.`,
  expired: (id) => `Request ${id} expired: its decisions can no longer be made.`,
  withdrawn: (id) => `Request ${id} was withdrawn by its requester: there is nothing left to decide.`,
};

/** Build the decision tools on a runner's core. */
export function createDecisionTools(core: RunnerCore, server: ResumeServer): DecisionTools {
  const { codec, log } = core;

  /** A request by a client-given id, its flow and its opened blob; or why not, as a refusal. */
  async function load(tool: string, id: unknown) {
    const ledger = core.ledger;
    if (!ledger) {
      return {
        refusal: refuse(tool, 'This server keeps no requests: it runs without a ledger (baton serve --ledger URL).'),
      };
    }
    if (typeof id !== 'string' || !ID.test(id)) return { refusal: refuse(tool, 'There is no request with that id.') };
    const row = await ledger.getRequest(id);
    if (!row) return { refusal: refuse(tool, `There is no request ${id}.`) };
    const flow = core.flows.get(row.flow);
    if (!flow)
      return {
        refusal: refuse(tool, `Request ${id} belongs to "${row.flow}", which this server does not serve.`, row),
      };
    const blob = openParked(codec, row);
    const body = blob && currentBody(flow, blob);
    if (!blob || !body) {
      log({
        type: 'flow_error',
        flow: flow.name,
        fid: id,
        error: new Error('the parked request does not open or cannot be migrated'),
      });
      return { refusal: refuse(tool, `Request ${id} cannot be read on this server. The server log has details.`, row) };
    }
    return { ledger, row, flow, blob: { ...blob, s: body } as ParkedBlob };
  }

  /** Whether `caller` may make `key` on this request, or why not. */
  function allowed(flow: Flow, blob: ParkedBlob, key: string, caller: DecisionCaller): true | string {
    const spec = flow.inputs[key] as DecisionSpec;
    const ok = spec.mayDecide({ context: blob.s.s[1], principal: caller.principal, roles: caller.roles ?? [] });
    if (ok) return true;
    return spec.role !== undefined && !(caller.roles ?? []).includes(spec.role)
      ? `it needs the role "${spec.role}"`
      : 'the flow does not allow you to make it';
  }

  /** The decision the caller makes on this request, or a refusal saying why not. */
  function choose(
    row: ParkedRequest,
    flow: Flow,
    blob: ParkedBlob,
    records: readonly DecisionRecord[],
    key: string | undefined,
    caller: DecisionCaller,
  ): { record: DecisionRecord } | { refusal: ErrorOutcome } {
    const id = row.id;
    const now = core.now();
    const no = (message: string) => ({ refusal: refuse(DECIDE_TOOL, message, row) });
    if (row.status !== 'waiting') return no(ENDED[row.status](id));
    if (isRequester(codec, blob, caller.principal)) {
      return no(
        `You requested ${id}, so you cannot decide it: a requester never decides their own request (four eyes).`,
      );
    }
    const expired = (r: DecisionRecord) => r.deadline !== null && r.deadline <= now;
    const decisionKey = (r: DecisionRecord) => isDecision(flow.inputs[r.key]);
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
    if (records.some((r) => r.status === 'decided'))
      return no(`The decisions on request ${id} have already been made.`);
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
    flow: Flow,
    row: ParkedRequest,
    record: DecisionRecord,
    binding: StateBinding,
    round: number,
    note?: string,
  ): RoundOutcome {
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

  /**
   * Advance a parked flow from its latest state: deliver the recorded decisions it awaits (and
   * `event`), run it to its next wait or end, write it back; replayed on a conflict.
   */
  async function advance(flow: Flow, id: string, caller: string, event?: EventObject): Promise<Step | undefined> {
    const ledger = core.ledger!;
    for (let attempt = 0; attempt < MAX_ADVANCE_ATTEMPTS; attempt++) {
      const row = await ledger.getRequest(id);
      if (row?.status !== 'waiting') return undefined;
      const opened = openParked(codec, row);
      const body = opened && currentBody(flow, opened);
      if (!opened || !body) return undefined;
      const blob: ParkedBlob = { ...opened, s: body };
      const started = core.now();
      const received: AuditAnswer[] = [];
      const path: import('xstate').StateValue[] = [];
      const requester = requesterBinding(flow.name, blob);
      const inject = {
        decisions: recordedDecisions(core, await ledger.listDecisions({ id }), body),
        ...(event ? { event } : {}),
      };
      const result = await step(core, {
        flow,
        parked: { row, blob },
        requester,
        binding: requester,
        fid: id,
        round: blob.r + 1,
        context: {},
        from: { body, pending: [] },
        answers: readAnswers(undefined),
        inject,
        audit: { received, path },
      });
      if (result.type === 'conflict') continue;
      const outcome = result.type === 'done' ? result.end.outcome : undefined;
      await core.audit({
        flow,
        fid: id,
        round: blob.r + 1,
        started,
        principal: caller,
        before: body.s[0],
        path,
        asked: result.type === 'ask' ? result.end.asked : [],
        received,
        outcome: outcome ? outcome.type : 'input_required',
        ...(outcome?.type === 'error' ? { message: outcome.message } : {}),
      });
      return result;
    }
    log({
      type: 'flow_error',
      flow: flow.name,
      fid: id,
      error: new Error('the request kept changing while advancing it'),
    });
    return undefined;
  }

  /** What became of the flow after a decision or a withdrawal, in a sentence. */
  function aftermath(id: string, result: Step | undefined): string {
    if (!result) return `Request ${id} continues when its requester comes back.`;
    if (result.type === 'done') {
      const said = text(result.end.outcome);
      return result.end.terminal
        ? `The flow has ended${said ? `: ${said}` : '.'}`
        : `The flow could not continue yet: ${said}`;
    }
    if (result.type === 'waiting') {
      const keys = result.end.decisions.map((d) => (d.role ? `${d.key} (role ${d.role})` : d.key));
      return `Request ${id} now waits for ${keys.join(' and ')}.`;
    }
    if (result.type === 'ask') return `Request ${id} now waits for its requester.`;
    if (result.type === 'working') return `Request ${id} is running ${result.end.steps.join(', ')}.`;
    return '';
  }

  async function decide(request: DecideRequest): Promise<RoundOutcome> {
    const { id, key, context } = request;
    checkRoundInput(key === undefined ? { id } : { id, key }, request.inputResponses);
    if (key !== undefined && (typeof key !== 'string' || !KEY.test(key))) {
      return refuse(DECIDE_TOOL, 'There is no decision with that key.');
    }
    const loaded = await load(DECIDE_TOOL, id);
    if ('refusal' in loaded) return loaded.refusal!;
    const { ledger, row, flow, blob } = loaded;
    const binding = decideBinding(context, flow.name, row.id, key);

    if (request.requestState === undefined) {
      const chosen = choose(row, flow, blob, await ledger.listDecisions({ id: row.id }), key, context);
      if ('refusal' in chosen) return chosen.refusal;
      if (context.capabilities !== undefined && context.capabilities.form !== true) {
        return refuse(
          DECIDE_TOOL,
          'Deciding needs form elicitation, which the client did not declare in its capabilities.',
          row,
        );
      }
      return askDecision(flow, row, chosen.record, binding, 1);
    }

    // The retry: open, check and redeem the state before anything is recorded.
    let claims: RequestStateClaims;
    try {
      claims = codec.open(request.requestState, binding);
    } catch (error) {
      if (error instanceof InvalidRequestStateError)
        log({ type: 'invalid_state', flow: flow.name, reason: error.reason });
      throw error;
    }
    const chosenKey = (claims.body as { k?: unknown } | null)?.k;
    if (claims.fid !== row.id || typeof chosenKey !== 'string' || claims.hash !== flow.hash) {
      log({
        type: 'invalid_state',
        flow: flow.name,
        reason: 'bad_snapshot',
        detail: 'not a decide state for this request',
      });
      throw new InvalidRequestStateError('bad_snapshot');
    }
    const answers = readAnswers(request.inputResponses, ['decision']);
    const redemption = await ledger.redeem({
      jti: claims.jti,
      responsesDigest: codec.digest(answers, 'responses'),
      expiresAt: claims.exp,
      now: core.now(),
    });
    if (redemption.status === 'replayed') {
      log({ type: 'invalid_state', flow: flow.name, reason: 'replayed' });
      throw new InvalidRequestStateError('replayed');
    }
    if (redemption.status === 'retry') {
      try {
        return JSON.parse(codec.openBlob(redemption.outcome, 'outcome', outcomeBinding(claims.jti, flow.name, row.id)));
      } catch {
        log({
          type: 'invalid_state',
          flow: flow.name,
          reason: 'bad_integrity',
          detail: 'recorded outcome does not open',
        });
        throw new InvalidRequestStateError('bad_integrity');
      }
    }
    const outcome = await record(flow, row, blob, chosenKey, binding, claims.round + 1, answers.decision, context);
    await ledger
      .recordOutcome(
        claims.jti,
        codec.sealBlob(JSON.stringify(outcome), 'outcome', outcomeBinding(claims.jti, flow.name, row.id)),
      )
      .catch((error: unknown) => log({ type: 'flow_error', flow: flow.name, fid: row.id, error }));
    return outcome;
  }

  /** The decide retry after redemption: validate, record once, tell `onDecided`, advance the flow. */
  async function record(
    flow: Flow,
    row: ParkedRequest,
    blob: ParkedBlob,
    key: string,
    binding: StateBinding,
    round: number,
    raw: unknown,
    context: DecisionCaller,
  ): Promise<RoundOutcome> {
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
    const chosen = choose(row, flow, blob, records, key, context);
    if ('refusal' in chosen) return { ...chosen.refusal, round };
    const spec = flow.inputs[key] as DecisionSpec;
    if (raw === undefined)
      return askDecision(flow, row, chosen.record, binding, round, 'Please answer the decision form.');
    const parsed = spec.parseAnswer(raw);
    if (!parsed.ok) {
      return askDecision(
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
    const recorded = await ledger.recordDecision({
      id: row.id,
      key,
      decider: context.principal,
      content: sealDecision(codec, row.id, key, context.principal, parsed.answer.content),
      now: decidedAt,
    });
    if (recorded.status !== 'recorded') {
      const why = {
        already_decided: `The decision "${key}" on request ${row.id} was made by someone else first; yours was not recorded.`,
        closed: `The decision "${key}" on request ${row.id} is closed: the request ended first. Yours was not recorded.`,
        expired: `The decision "${key}" on request ${row.id} expired before your answer arrived; it was not recorded.`,
        unknown: `Request ${row.id} has no decision "${key}".`,
      }[recorded.status];
      return { type: 'error', ...base, message: why };
    }
    const decider =
      core.decisions.hookPrincipals === 'id' ? context.principal : principalHash(codec, context.principal);
    callHook(core, 'onDecided', core.decisions.onDecided, { id: row.id, key, flow: flow.name, decider, decidedAt });
    const result = await advance(flow, row.id, context.principal);
    return {
      type: 'complete',
      ...base,
      result: {
        content: [
          { type: 'text', text: `Recorded ${key} on request ${row.id} (${flow.name}). ${aftermath(row.id, result)}` },
        ],
        structuredContent: { status: 'recorded', id: row.id, key },
      },
    };
  }

  async function inbox(context: DecisionCaller): Promise<InboxItem[]> {
    const ledger = core.ledger;
    if (!ledger) return [];
    const now = core.now();
    const records = await ledger.listDecisions({
      pendingFor: { roles: context.roles ?? [], excludeRequester: principalHash(codec, context.principal), now },
    });
    const items: InboxItem[] = [];
    const loaded = new Map<string, Awaited<ReturnType<typeof load>>>();
    for (const record of records) {
      if (!loaded.has(record.id)) loaded.set(record.id, await load('baton_inbox', record.id));
      const request = loaded.get(record.id)!;
      if ('refusal' in request) continue;
      const { row, flow, blob } = request;
      if (row.status !== 'waiting' || !isDecision(flow.inputs[record.key])) continue;
      // The ledger filters by the stored hash; the parked requester is compared again here.
      if (isRequester(codec, blob, context.principal)) continue;
      if (allowed(flow, blob, record.key, context) !== true) continue;
      items.push({
        id: record.id,
        key: record.key,
        flow: record.flow,
        message: record.message,
        requestedAt: record.requestedAt,
        ...(record.deadline === null ? {} : { deadline: record.deadline }),
      });
    }
    return items;
  }

  async function requests(context: DecisionCaller): Promise<RequestItem[]> {
    const ledger = core.ledger;
    if (!ledger) return [];
    const rows = await ledger.listRequests(principalHash(codec, context.principal), core.now() - PARKED_RETENTION_MS);
    return rows.map((row) => ({
      id: row.id,
      flow: row.flow,
      status: row.status,
      ...(row.status === 'waiting' ? { waitingFor: row.waitingFor.map((w) => ({ ...w })) } : {}),
    }));
  }

  async function resume(request: ResumeRequest): Promise<RoundOutcome> {
    const { id, context } = request;
    checkRoundInput({ id }, request.inputResponses);
    const loaded = await load(RESUME_TOOL, id);
    if ('refusal' in loaded) return loaded.refusal!;
    const { row, flow, blob } = loaded;
    if (!isRequester(codec, blob, context.principal)) {
      return refuse(RESUME_TOOL, `Only the requester may resume request ${row.id}.`, row);
    }
    const binding: StateBinding = {
      principal: context.principal,
      flow: flow.name,
      method: 'tools/call',
      target: RESUME_TOOL,
      args: { id: row.id },
    };
    return server.resume(
      flow,
      binding,
      context,
      request.requestState,
      request.inputResponses,
      request.requestState ? undefined : row,
    );
  }

  async function withdraw(request: WithdrawRequest): Promise<RoundOutcome> {
    const { id, context } = request;
    const loaded = await load('baton_withdraw', id);
    if ('refusal' in loaded) return loaded.refusal!;
    const { row, flow, blob } = loaded;
    const no = (message: string) => refuse('baton_withdraw', message, row);
    if (!isRequester(codec, blob, context.principal)) return no(`Only the requester may withdraw request ${row.id}.`);
    if (row.status !== 'waiting') {
      return no(
        row.status === 'withdrawn'
          ? `Request ${row.id} was already withdrawn.`
          : `Request ${row.id} has ended (${row.status}): it can no longer be withdrawn.`,
      );
    }
    const event = { type: WITHDRAW_EVENT };
    if (!core.accepts(flow, blob.s, event)) {
      return no(
        `Request ${row.id} cannot be withdrawn now: "${flow.name}" has no withdrawal path (${WITHDRAW_EVENT}) where it stands. Nothing changed.`,
      );
    }
    const result = await advance(flow, row.id, context.principal, event);
    if (!result) {
      const now = await core.ledger!.getRequest(row.id);
      return no(`Request ${row.id} has ended (${now?.status ?? 'gone'}) meanwhile: it was not withdrawn.`);
    }
    const base = { flow: flow.name, fid: row.id, round: 1 };
    const said =
      result.type === 'done'
        ? resultText(result.end.outcome.type === 'complete' ? result.end.outcome.result : undefined)
        : '';
    const status = result.type === 'done' ? result.status : 'waiting';
    const textOut =
      status === 'withdrawn'
        ? `Withdrawn: request ${row.id} (${flow.name}).${said ? ` The flow says: ${said}` : ''}`
        : `Withdrawal delivered to request ${row.id} (${flow.name}). ${aftermath(row.id, result)}`;
    return {
      type: 'complete',
      ...base,
      result: {
        content: [{ type: 'text', text: textOut }],
        structuredContent: { status: status ?? 'waiting', id: row.id },
      },
    };
  }

  return { inbox, decide, requests, resume, withdraw };
}
