/**
 * A parked flow instance seen as an MCP Task (the `io.modelcontextprotocol/tasks`
 * extension): its status, the sentence that says what and whom it waits for,
 * its times, retention and the poll interval that suits what it waits on, all
 * derived from the parked request in the ledger (no table of its own: the task
 * id is the request id). A requester's round that parks the instance for a
 * client that declared the extension answers at once with the flow's
 * "waiting" or "working" result marked with the task ({@link taskOf}), and the
 * adapters put the task on the wire in its place. Transport-free: no MCP
 * types here; `taskTools.ts` serves `tasks/get`, `tasks/update` and
 * `tasks/cancel` from the same derivation.
 */
import type { ParkedRequest } from '../contract/ledger.js';
import type { FlowResult, RoundOutcome } from '../contract/outcome.js';
import type { WireInputRequest } from '../contract/wire.js';
import type { AwaitedDecision } from '../round/play.js';

/** Where a task stands (the extension's statuses). */
export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/** A flow instance as a task, times in ms since epoch. */
export interface TaskSnapshot {
  /** The task id: the parked request's id (128 random bits). */
  readonly id: string;
  readonly status: TaskStatus;
  /** What and whom it waits for, or how it ended, in a sentence. */
  readonly statusMessage?: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** How long the ledger keeps it from its creation, ms (the parked request's retention). */
  readonly ttlMs: number;
  /** How often a client should poll it, ms: short for running steps, longer for a person. */
  readonly pollIntervalMs: number;
  /**
   * `input_required`: what the flow asks its requester, by task input key (`<input key>@<version>`:
   * a new key for every state of the request, so a question asked again is a new question).
   */
  readonly inputRequests?: Readonly<Record<string, WireInputRequest>>;
  /** `completed`: the flow's result (`isError` when the flow failed). */
  readonly result?: FlowResult;
  /** `failed`: why the task cannot go on here, as a JSON-RPC error. */
  readonly error?: { readonly code: number; readonly message: string };
}

/**
 * How long a round for a client that follows tasks waits for running durable steps before it
 * parks them and answers with the task, ms. Steps that finish sooner answer in the call.
 */
export const TASK_AFTER_MS = 500;

/** Poll intervals of tasks, ms. */
export interface TaskPollSettings {
  /** Waiting on a person's decision. */
  readonly decisionMs: number;
  /** Durable steps running, a timer, the requester's own answer. */
  readonly stepMs: number;
}

/** Poll intervals of tasks: `decisionMs` for a person, a fifth of it (200 ms to 1 s) otherwise. */
export function taskPollSettings(decisionMs: number): TaskPollSettings {
  return { decisionMs, stepMs: Math.min(1000, Math.max(200, decisionMs / 5)) };
}

const marks = new WeakMap<RoundOutcome, TaskSnapshot>();

/** Mark `outcome` (a parked instance's complete "waiting" or "working" result) as answered by `task`. */
export function markTask<O extends RoundOutcome>(outcome: O, task: TaskSnapshot): O {
  marks.set(outcome, task);
  return outcome;
}

/**
 * The task a round's outcome stands for: set when the call declared the tasks extension and the
 * flow was parked (durably written) waiting on someone else or on its running steps. Answer the
 * client with the task instead of the outcome's result.
 */
export function taskOf(outcome: RoundOutcome): TaskSnapshot | undefined {
  return marks.get(outcome);
}

/** An ISO-like minute, as people read deadlines: `2026-12-08 09:00 UTC`. */
export function utcMinute(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** What a parked request waits for, in a sentence ("Waiting for a decision by someone with the role manager, until …"). */
export function waitingSentence(decisions: readonly Pick<AwaitedDecision, 'key' | 'role' | 'deadline'>[]): string {
  if (decisions.length === 0) return 'Waiting.';
  const parts = decisions.map(({ key, role }) =>
    role === null ? `a decision (${key})` : `a decision by someone with the role ${role}`,
  );
  const deadlines = decisions.map((d) => d.deadline).filter((d): d is number => d !== null);
  const until = deadlines.length > 0 ? `, until ${utcMinute(Math.min(...deadlines))}` : '';
  return `Waiting for ${parts.join(' and ')}${until}.`;
}

/** What running steps are, in a sentence. */
export function workingSentence(steps: readonly string[]): string {
  const names = [...new Set(steps.map((key) => key.replace(/#\d+$/, '')))];
  return names.length > 0 ? `Working: ${names.join(', ')} running.` : 'Working.';
}

/** The fields every task of a parked request shares. */
export function taskBase(row: Pick<ParkedRequest, 'id' | 'createdAt' | 'updatedAt' | 'expiresAt'>) {
  return {
    id: row.id,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    ttlMs: Math.max(0, row.expiresAt - row.createdAt),
  };
}

/** A parked request that waits on decisions or on its running steps, as a `working` task. */
export function workingTask(
  row: ParkedRequest,
  waits:
    | { readonly decisions: readonly Pick<AwaitedDecision, 'key' | 'role' | 'deadline'>[] }
    | { readonly steps: readonly string[] },
  poll: TaskPollSettings,
): TaskSnapshot {
  const onPeople = 'decisions' in waits && waits.decisions.length > 0;
  return {
    ...taskBase(row),
    status: 'working',
    statusMessage: 'decisions' in waits ? waitingSentence(waits.decisions) : workingSentence(waits.steps),
    pollIntervalMs: Math.round(onPeople ? poll.decisionMs : poll.stepMs),
  };
}
