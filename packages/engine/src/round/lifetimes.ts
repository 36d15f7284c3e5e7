/**
 * How long a minted state lives, and the cap that bounds it. A state lives
 * `ttlSeconds` (default 30 minutes), extended so that it always outlives its
 * earliest pending durable deadline by {@link DEADLINE_GRACE_SECONDS}: the
 * caller's next round after the deadline still opens the state, fires the
 * deadline and reaches the flow's `after` branch (the person reads the
 * flow's "expired" text, never a bare -32602). No state lives longer than
 * `maxTtlSeconds` (default {@link DEFAULT_MAX_TTL_SECONDS}, 30 days, for
 * approvals that take days), so a flow must never wait longer than the cap
 * minus the grace. That is checked when flows are loaded
 * ({@link checkFlowDeadlines}: every `after` delay in the machine definition,
 * numeric or named with a constant value in `setup({ delays })`) and, for
 * delays computed from context, when a state is minted
 * ({@link deadlineBeyondCap}: the round fails with a `FlowError` saying so).
 */
import type { AnyStateMachine } from 'xstate';
import type { Flow } from '../authoring/flowTypes.js';
import { machineGraph } from '../authoring/graph.js';
import { FlowDefinitionError, FlowError } from '../errors.js';
import type { Deadline } from './timers.js';

/** How long a state outlives its earliest pending deadline, seconds (5 minutes): time to take the `after` branch. */
export const DEADLINE_GRACE_SECONDS = 300;
/** Default lifetime of a minted state with no pending deadline, seconds (30 minutes). */
export const DEFAULT_TTL_SECONDS = 1800;
/** Default cap on any state's lifetime, seconds: 30 days (30 × 86,400), so approvals may take days. */
export const DEFAULT_MAX_TTL_SECONDS = 2_592_000;

/** The lifetime settings a runner mints with. */
export interface LifetimeSettings {
  readonly ttlSeconds: number;
  readonly maxTtlSeconds: number;
}

const UNITS: readonly [string, number][] = [
  ['day', 86_400],
  ['hour', 3600],
  ['minute', 60],
  ['second', 1],
];

/** A duration in words: `7 days 5 minutes`, `1 hour`, `90 seconds` is `1 minute 30 seconds`. */
export function durationInWords(seconds: number): string {
  let left = Math.ceil(seconds);
  const parts: string[] = [];
  for (const [unit, size] of UNITS) {
    const n = Math.floor(left / size);
    left -= n * size;
    if (n > 0) parts.push(`${n} ${unit}${n === 1 ? '' : 's'}`);
  }
  return parts.length > 0 ? parts.join(' ') : '0 seconds';
}

/**
 * The lifetime of a state whose pending deadlines are `live`, seconds: `ttlSeconds`, or longer to
 * outlive the earliest deadline by the grace; never over `maxTtlSeconds` (a deadline the cap
 * cannot cover is refused before minting: {@link deadlineBeyondCap}).
 */
export function stateLifetime(settings: LifetimeSettings, live: readonly Deadline[] | undefined, now: number): number {
  const { ttlSeconds, maxTtlSeconds } = settings;
  if (!live || live.length === 0) return ttlSeconds;
  const earliest = Math.min(...live.map((d) => d[1]));
  const cover = Math.ceil((earliest - now) / 1000) + DEADLINE_GRACE_SECONDS;
  return Math.min(Math.max(maxTtlSeconds, ttlSeconds), Math.max(ttlSeconds, cover));
}

/**
 * A deadline computed at run time (a delay that is a function of context) that the cap cannot
 * cover plus the grace: the error to fail the round with, else `undefined`.
 */
export function deadlineBeyondCap(
  flow: string,
  settings: LifetimeSettings,
  live: readonly Deadline[],
  now: number,
): FlowError | undefined {
  if (live.length === 0) return undefined;
  const waits = (Math.min(...live.map((d) => d[1])) - now) / 1000;
  if (waits + DEADLINE_GRACE_SECONDS <= settings.maxTtlSeconds) return undefined;
  return new FlowError(
    `The flow "${flow}" waits ${durationInWords(waits)} for a deadline, longer than the longest state lifetime (max TTL ${durationInWords(settings.maxTtlSeconds)}); nothing was saved. The server needs a longer --max-ttl.`,
  );
}

/** A constant `after` delay of a machine: the state's path and the delay, ms. */
interface StaticDelay {
  readonly state: string;
  readonly ms: number;
}

/** Every `after` delay of the machine whose value is known without running it (not functions of context). */
export function staticDelays(machine: AnyStateMachine): StaticDelay[] {
  return machineGraph(machine).nodes.flatMap((node) =>
    node.after.flatMap((delay) => (delay.ms === undefined ? [] : [{ state: node.path.join('.'), ms: delay.ms }])),
  );
}

/**
 * Refuse a flow that waits on a deadline longer than a state may live: its longest constant
 * `after` delay plus {@link DEADLINE_GRACE_SECONDS} must fit in `maxTtlSeconds`.
 * @throws FlowDefinitionError naming the flow, the state and both durations.
 */
export function checkFlowDeadlines(flow: Pick<Flow, 'name' | 'machine'>, maxTtlSeconds: number): void {
  let longest: StaticDelay | undefined;
  for (const delay of staticDelays(flow.machine)) if (!longest || delay.ms > longest.ms) longest = delay;
  if (!longest) return;
  const needed = Math.ceil(longest.ms / 1000) + DEADLINE_GRACE_SECONDS;
  if (needed <= maxTtlSeconds) return;
  throw new FlowDefinitionError(
    `flow "${flow.name}": state "${longest.state}" waits up to ${durationInWords(longest.ms / 1000)}, longer than the longest state lifetime (--max-ttl ${durationInWords(maxTtlSeconds)}, maxTtlSeconds ${maxTtlSeconds}); raise --max-ttl to at least ${durationInWords(needed)} (${needed} seconds): a state outlives its deadline by ${durationInWords(DEADLINE_GRACE_SECONDS)}`,
  );
}
