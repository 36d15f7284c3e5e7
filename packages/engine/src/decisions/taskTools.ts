/**
 * The tasks extension's methods on parked flow instances, transport-free:
 * `get` (the task as the ledger has it, on any instance), `update` (the
 * requester's answers delivered as one round) and `cancel` (the flow's
 * withdrawal). Every one starts from the parked request and answers
 * `undefined` alike for an unknown id and for another principal's task (no
 * oracle). `get` answers a request that only waits on people from the ledger
 * as it stands (a poll writes nothing); otherwise it plays the requester's
 * round from the latest parked state with nothing delivered (the round a
 * `baton_resume` plays, without its hold), so steps that finished or
 * deadlines that came due move the flow on, and reads
 * what it came to: `working` with what it waits for, `input_required` with the
 * questions (keys suffixed with the request's version: a question asked again
 * is a new question), or its end. `update` mints a state of that round and
 * plays it with the answers, so validation, re-asking, single use (the state's
 * redemption and the request's compare-and-set) and the binding to the
 * requester are the MRTR round's own; answers to an older version are
 * acknowledged and never delivered (a repeated update is idempotent).
 */
import type { Flow } from '../authoring/flowTypes.js';
import type { StateBinding } from '../codec/types.js';
import type { CallContext } from '../contract/call.js';
import type { ParkedRequest } from '../contract/ledger.js';
import type { RoundOutcome } from '../contract/outcome.js';
import type { WireInputRequest } from '../contract/wire.js';
import { checkRoundInput } from '../round/clientInput.js';
import { stateLifetime } from '../round/lifetimes.js';
import { load } from './access.js';
import { isRequester, openParked, type ParkedBlob, parkedBody, sealParked } from './parked.js';
import type { DecisionsPort } from './port.js';
import { RESUME_TOOL, withdraw } from './requestTools.js';
import { type TaskSnapshot, taskBase, taskOf, workingTask } from './taskStatus.js';
import type { DecisionCaller, ResumeServer } from './types.js';

/** Who calls a task method. */
export type TaskCaller = DecisionCaller;

/** What `cancel` came to. */
export type TaskCancelResult =
  | { readonly type: 'cancelled' }
  /** The task had ended already (or ended meanwhile): nothing to cancel, acknowledged alike. */
  | { readonly type: 'ended' }
  /** Not cancelled: finished, or no withdrawal path where the flow stands; `message` says why. */
  | { readonly type: 'refused'; readonly message: string };

/** The tasks extension's methods of a runner (see the module comment). */
export interface TaskTools {
  /** The task `id` of `context`'s principal; `undefined` for an unknown id or someone else's task. */
  get(request: { readonly id: unknown; readonly context: TaskCaller }): Promise<TaskSnapshot | undefined>;
  /**
   * Deliver `inputResponses` (task input keys, `<key>@<version>`) as one round; `true` when
   * acknowledged (delivered, refused and asked again, or already answered), `undefined` as `get`.
   */
  update(request: {
    readonly id: unknown;
    readonly context: TaskCaller;
    readonly inputResponses: unknown;
  }): Promise<true | undefined>;
  /** Withdraw the task's flow (`baton.withdraw`); `undefined` as `get`. */
  cancel(request: { readonly id: unknown; readonly context: TaskCaller }): Promise<TaskCancelResult | undefined>;
}

/** The separator of a task input key: `<input key>@<request version>`. */
const VERSION_SEPARATOR = '@';

/** The requester's own parked request, or `undefined` (unknown, unreadable, or someone else's: the same). */
async function own(core: DecisionsPort, id: unknown, principal: string) {
  const loaded = await load(core, 'tasks', id);
  if ('refusal' in loaded) return undefined;
  return isRequester(core.codec, loaded.blob, principal) ? loaded : undefined;
}

/** The binding of the requester's resume rounds (what `baton_resume` binds its states to). */
function resumeBinding(principal: string, flow: Flow, id: string): StateBinding {
  return { principal, flow: flow.name, method: 'tools/call', target: RESUME_TOOL, args: { id } };
}

/** The task of a request that has ended. */
function ended(core: DecisionsPort, row: ParkedRequest, blob: ParkedBlob): TaskSnapshot {
  const base = { ...taskBase(row), pollIntervalMs: Math.round(core.decisions.taskPoll.decisionMs) };
  const final = blob.o;
  if (row.status === 'withdrawn') {
    return { ...base, status: 'cancelled', statusMessage: `Withdrawn: request ${row.id} (${row.flow}).` };
  }
  if (row.status === 'terminated') {
    // An operator ended it (`baton runs terminate`): the task did not run to its end.
    return {
      ...base,
      status: 'cancelled',
      statusMessage: `Terminated by an operator: request ${row.id} (${row.flow}).`,
    };
  }
  if (!final) {
    return {
      ...base,
      status: 'failed',
      error: { code: -32603, message: `Request ${row.id} has ended (${row.status}) without a result.` },
    };
  }
  // A flow that failed (an error no state of it handles) did not produce a tool result: `failed`.
  if (final.type === 'error') return { ...base, status: 'failed', error: { code: -32603, message: final.message } };
  return { ...base, status: 'completed', statusMessage: `Ended: ${row.status}.`, result: final.result };
}

/**
 * The task of a request that only waits on people, read without playing a round (so a poll
 * writes nothing, not even an audit entry): parked on decisions, no steps running, no deadline
 * due, no question asked again, and every decision recorded already delivered. `undefined` when
 * a round may move it on (the caller plays one).
 */
async function stillWaiting(
  core: DecisionsPort,
  row: ParkedRequest,
  blob: ParkedBlob,
): Promise<TaskSnapshot | undefined> {
  const now = core.now();
  if (row.waitingFor.length === 0 || blob.s.r !== undefined || blob.q !== undefined) return undefined;
  if ((blob.s.t ?? []).some((deadline) => deadline[1] <= now)) return undefined;
  const delivered = new Set(blob.s.d ?? []);
  const records = await core.ledger!.decisions.listDecisions({ id: row.id });
  if (records.some((record) => record.status === 'decided' && !delivered.has(record.key))) return undefined;
  const awaited = new Set(row.waitingFor.map((w) => w.key));
  const pending = records.filter((record) => record.status === 'pending' && awaited.has(record.key));
  if (pending.length !== awaited.size) return undefined;
  return workingTask(
    row,
    { decisions: pending.map(({ key, role, deadline }) => ({ key, role, deadline })) },
    core.decisions.taskPoll,
  );
}

/** The version a question's task key names: when it was first shown (`blob.a`), else the request's. */
function askedAt(key: string, version: number, shown: ParkedBlob['a']): number {
  return shown !== undefined && Object.hasOwn(shown, key) ? shown[key]! : version;
}

/** Task input keys for the flow's questions at `version` (or at the version each was first shown). */
function taskKeys(requests: Readonly<Record<string, WireInputRequest>>, version: number, shown: ParkedBlob['a']) {
  const out: Record<string, WireInputRequest> = {};
  for (const [key, request] of Object.entries(requests)) {
    out[`${key}${VERSION_SEPARATOR}${askedAt(key, version, shown)}`] = request;
  }
  return out;
}

/** What a requester's round on the parked request came to, as a task (the row read after it). */
async function fromOutcome(core: DecisionsPort, id: string, outcome: RoundOutcome): Promise<TaskSnapshot> {
  const marked = taskOf(outcome);
  if (marked) return marked;
  const row = await core.ledger!.requests.getRequest(id);
  const poll = core.decisions.taskPoll;
  if (!row) {
    return {
      id,
      status: 'failed',
      createdAt: core.now(),
      updatedAt: core.now(),
      ttlMs: 0,
      pollIntervalMs: Math.round(poll.decisionMs),
      error: { code: -32603, message: `Request ${id} is no longer kept.` },
    };
  }
  const base = taskBase(row);
  if (outcome.type === 'input_required') {
    const blob = openParked(core.codec, row);
    const asked = blob?.q ?? outcome.inputRequests;
    return {
      ...base,
      status: 'input_required',
      statusMessage: 'Waiting for your answer.',
      pollIntervalMs: Math.round(poll.stepMs),
      inputRequests: taskKeys(asked, row.version, blob?.q ? undefined : blob?.a),
    };
  }
  if (outcome.type === 'complete') {
    return {
      ...base,
      status: 'completed',
      statusMessage: `Ended: ${row.status}.`,
      pollIntervalMs: Math.round(poll.decisionMs),
      result: outcome.result,
    };
  }
  return {
    ...base,
    status: 'failed',
    pollIntervalMs: Math.round(poll.decisionMs),
    error: { code: -32603, message: outcome.message },
  };
}

/** Answers whose task keys name the version their question is shown at, by input key; the others are ignored. */
function answersAt(inputResponses: unknown, version: number, shown: ParkedBlob['a']): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (typeof inputResponses !== 'object' || inputResponses === null || Array.isArray(inputResponses)) return out;
  for (const key of Object.keys(inputResponses)) {
    const at = key.lastIndexOf(VERSION_SEPARATOR);
    if (at <= 0) continue;
    const input = key.slice(0, at);
    if (key.slice(at + 1) !== String(askedAt(input, version, shown))) continue;
    const own = Object.getOwnPropertyDescriptor(inputResponses, key);
    if (own && 'value' in own && own.value !== undefined) out[input] = own.value;
  }
  return out;
}

/**
 * After a refused answer was asked again (the round wrote nothing), keep what was asked on the
 * parked request, so that the next `get` shows it (with its reason) under new task keys: the
 * write moves the request to a new version. A conflict means someone moved the request on: the
 * next `get` shows where it stands.
 */
async function keepAskedAgain(
  core: DecisionsPort,
  id: string,
  principal: string,
  kept: Pick<ParkedBlob, 'q'> | Pick<ParkedBlob, 'a'>,
): Promise<void> {
  const found = await own(core, id, principal);
  if (found?.row.status !== 'waiting') return;
  const { row } = found;
  const opened = openParked(core.codec, row);
  if (!opened) return;
  const blob: ParkedBlob = { ...opened, ...kept };
  const now = core.now();
  await core.ledger!.requests.parkRequest(
    {
      id: row.id,
      flow: row.flow,
      requester: row.requester,
      requesterName: row.requesterName,
      status: row.status,
      waitingFor: row.waitingFor,
      state: sealParked(core.codec, row.id, row.flow, blob),
      now,
      expiresAt: row.expiresAt,
    },
    row.version,
  );
}

/** Build the task methods on a runner's core; `server` plays the requester's resume rounds. */
export function createTaskTools(core: DecisionsPort, server: ResumeServer): TaskTools {
  const tasksContext = (context: TaskCaller): TaskCaller & Pick<CallContext, 'tasks'> => ({ ...context, tasks: true });
  return {
    async get({ id, context }) {
      const found = await own(core, id, context.principal);
      if (!found) return undefined;
      const { row, flow, blob } = found;
      if (row.status !== 'waiting') return ended(core, row, blob);
      const waiting = await stillWaiting(core, row, blob);
      if (waiting) return waiting;
      const binding = resumeBinding(context.principal, flow, row.id);
      const outcome = await server.resume(flow, binding, tasksContext(context), undefined, undefined, row);
      return fromOutcome(core, row.id, outcome);
    },

    async update({ id, context, inputResponses }) {
      checkRoundInput({ id }, inputResponses as Readonly<Record<string, unknown>> | undefined);
      const found = await own(core, id, context.principal);
      if (!found) return undefined;
      const { row, flow, blob } = found;
      const answers = answersAt(inputResponses, row.version, blob.q ? undefined : blob.a);
      // Ended, moved on since the question was shown, or nothing for this version: nothing to deliver.
      if (row.status !== 'waiting' || Object.keys(answers).length === 0) return true;
      const binding = resumeBinding(context.principal, flow, row.id);
      const body = { ...parkedBody(blob.s), pv: row.version };
      const { token } = core.codec.mint(
        binding,
        { fid: row.id, hash: flow.hash, round: blob.r, body },
        { ttlSeconds: stateLifetime(core.settings, body.t, core.now()) },
      );
      const outcome = await server.resume(flow, binding, tasksContext(context), token, answers, undefined);
      if (outcome.type === 'input_required' && Object.keys(answers).some((key) => key in outcome.inputRequests)) {
        await keepAskedAgain(core, row.id, context.principal, { q: outcome.inputRequests });
      } else if (outcome.type === 'input_required') {
        // Some answers held, the other questions still open: they keep their task keys.
        const shown = blob.q ? undefined : blob.a;
        const a = Object.fromEntries(
          Object.keys(outcome.inputRequests).map((key) => [key, askedAt(key, row.version, shown)]),
        );
        await keepAskedAgain(core, row.id, context.principal, { a });
      }
      return true;
    },

    async cancel({ id, context }) {
      const found = await own(core, id, context.principal);
      if (!found) return undefined;
      if (found.row.status !== 'waiting') return { type: 'ended' };
      const outcome = await withdraw(core, { id: found.row.id, context });
      if (outcome.type !== 'error') return { type: 'cancelled' };
      // Ended meanwhile (a step finished, a decision came first): a cancel of an ended task.
      const now = await core.ledger!.requests.getRequest(found.row.id);
      if (now && now.status !== 'waiting') return { type: 'ended' };
      return { type: 'refused', message: outcome.message };
    },
  };
}
