/**
 * The `event` input: a message from another system (CI, a payment provider, a
 * signing service) that a flow waits for, declared like an input and asked in
 * a state's `meta` like one. Nobody answers it in a round: it arrives through
 * `runner.sendEvent` (or `POST /events/<name>` on `baton serve`), is checked
 * against the event's schema, and is delivered to every parked instance
 * waiting for it whose correlation key (`match` over the instance's context)
 * equals the event's (`key` over its data). This module only declares: what
 * an event is, how its data is read and keyed; routing is `events/`.
 */
import { z } from 'zod';
import { FlowDefinitionError } from '../../errors.js';
import { describeIssues } from './issues.js';
import { type InputSpec, never, type ParsedAnswer } from './spec.js';

/** The event payload (without `type`) the machine receives for an event input. */
export interface EventAnswer<T> {
  readonly action: 'received';
  /** The event's data, as its schema parsed it. */
  readonly data: T;
  /** The event's id (the sender's, e.g. the `webhook-id`, or one Baton gave it). */
  readonly id: string;
}

/** The default lookback window of an event, seconds: an event is kept this long for waits that begin after it. */
export const DEFAULT_EVENT_LOOKBACK_SECONDS = 300;

/** The longest correlation key, in characters (it is stored as it is, and indexed). */
export const MAX_EVENT_KEY_LENGTH = 256;

/**
 * A declared event: a state that asks its key (`meta: ask(inputs, 'ci')`) waits for it, parked in
 * the ledger, and the machine receives `{ type: 'input.<key>', action: 'received', data, id }`.
 */
export interface EventSpec<TData = unknown, TContext = any> extends InputSpec<EventAnswer<TData>, TContext> {
  readonly kind: 'event';
  /** The event's name (`ci.finished`): the `<name>` of `POST /events/<name>`. */
  readonly name: string;
  /** How long a received event is kept for waits that begin later, ms. */
  readonly lookbackMs: number;
  /**
   * Validate an event's data (sender-controlled): the parsed data, or the problem naming the field
   * from the body's root (`data.commit: required`), never echoing a value.
   */
  parseData(raw: unknown): ParsedAnswer<TData>;
  /**
   * The correlation key of an event's parsed data (`''` for an event without one), or the problem.
   */
  keyOf(data: TData): ParsedAnswer<string>;
  /**
   * The correlation key a waiting instance waits for, from its context (`''` without one).
   * @throws Error when the flow's `match` throws or gives no string or number.
   */
  matchOf(context: TContext): string;
  /** What must agree between two flows declaring the same event name (schema, key, lookback). */
  readonly identity: string;
}

/** Whether a declared input is an event. */
export function isEvent(spec: InputSpec<any, any> | undefined): spec is EventSpec<any, any> {
  return spec?.kind === 'event';
}

/** The schema as JSON Schema, for comparing declarations (`null` for one JSON Schema cannot express). */
function schemaShape(schema: z.ZodType): unknown {
  try {
    return z.toJSONSchema(schema, { unrepresentable: 'any' });
  } catch {
    return null;
  }
}

const NAME = /^[A-Za-z0-9_.-]{1,64}$/;

function asKey(value: unknown, what: string): string {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value !== 'string') throw new Error(`${what} gave ${value === undefined ? 'nothing' : typeof value}`);
  if (value.length > MAX_EVENT_KEY_LENGTH) throw new Error(`${what} is over ${MAX_EVENT_KEY_LENGTH} characters`);
  return value;
}

/**
 * An event from another system that a flow waits for. A state awaits it like an input
 * (`meta: ask(inputs, 'ci')`, with a plain `after` for a timeout); the caller is never asked for
 * it. While a flow awaits it, the instance is parked in the ledger (the flow needs one) exactly
 * like a decision wait, and the event is sent with `runner.sendEvent(name, { id?, data })` or
 * `POST /events/<name>`. `schema` checks the data (a bad body is refused, naming the field).
 * Correlation: `match` gives the key a waiting instance waits for (from its context) and `key`
 * the key an event carries (from its data); an event resumes every waiting instance whose key
 * equals its own. Give both or neither (then every waiting instance receives it). Keys are
 * strings or numbers, at most 256 characters, stored as they are: use ids, not secrets.
 * Lookback: an event that arrives before its instance waits is kept for `lookbackSeconds`
 * (default 300; 0: never) and delivered when the wait begins, once. Every flow that declares
 * the same event name must declare the same `schema`, `key` and `lookbackSeconds` (share one
 * `event()` across flows); `match` may differ.
 *
 * @example
 * ```ts
 * import { event } from '@baton/engine';
 * import { z } from 'zod';
 *
 * export const ciFinished = event({
 *   name: 'ci.finished',
 *   schema: z.object({ commit: z.string(), status: z.enum(['success', 'failure']) }),
 *   match: ({ context }: { context: { commit: string } }) => context.commit,
 *   key: ({ data }) => data.commit,
 * });
 * // POST /events/ci.finished  { "data": { "commit": "a1b2c3", "status": "success" } }
 * // the machine receives: { type: 'input.ci', action: 'received', data: { commit: 'a1b2c3', status: 'success' }, id: 'evt_…' }
 * ```
 * @throws FlowDefinitionError for a name that is not 1-64 of `[A-Za-z0-9_.-]`, `match` without
 *   `key` (or the reverse), or a lookback that is not a whole number of seconds from 0 to 7 days.
 */
export function event<TSchema extends z.ZodType, TContext = any>(options: {
  name: string;
  schema: TSchema;
  match?: (args: { context: TContext }) => string | number;
  key?: (args: { data: z.output<TSchema> }) => string | number;
  lookbackSeconds?: number;
}): EventSpec<z.output<TSchema>, TContext> {
  const { name, schema, match, key } = options;
  if (!NAME.test(name)) throw new FlowDefinitionError(`event name "${name}" must be 1-64 characters of [A-Za-z0-9_.-]`);
  if ((match === undefined) !== (key === undefined)) {
    throw new FlowDefinitionError(
      `event "${name}": give both \`match\` (the instance's key) and \`key\` (the event's), or neither`,
    );
  }
  const lookback = options.lookbackSeconds ?? DEFAULT_EVENT_LOOKBACK_SECONDS;
  if (!Number.isSafeInteger(lookback) || lookback < 0 || lookback > 7 * 24 * 3600) {
    throw new FlowDefinitionError(`event "${name}": lookbackSeconds must be a whole number from 0 to 604800`);
  }
  const identity = JSON.stringify([name, schemaShape(schema), key ? `fn:${key.toString()}` : null, lookback]);
  const parseData = (raw: unknown): ParsedAnswer<z.output<TSchema>> => {
    const parsed = schema.safeParse(raw);
    if (parsed.success) return { ok: true, answer: parsed.data };
    // Fields named from the body's root (`data.commit: required`), as a sender sees them.
    const issues = parsed.error.issues.map((issue) => ({ ...issue, path: ['data', ...issue.path] }));
    return { ok: false, problem: describeIssues(issues, { data: raw }) };
  };
  return {
    kind: 'event',
    name,
    fallback: false,
    onlyWhenAsked: true,
    lookbackMs: lookback * 1000,
    identity,
    shape: { kind: 'event', name, match: match ? `fn:${match.toString()}` : null, identity },
    // A caller is never asked for an event: the round asks only the caller's keys.
    build: () => {
      throw new Error(`event "${name}" is sent to the flow, not asked of its caller`);
    },
    parse: () => ({ ok: false, problem: 'an event is sent to the flow, not answered by its caller' }),
    oversized: never,
    parseData,
    keyOf(data) {
      if (!key) return { ok: true, answer: '' };
      try {
        return { ok: true, answer: asKey(key({ data }), 'key') };
      } catch (error) {
        return { ok: false, problem: `key: ${(error as Error).message}` };
      }
    },
    matchOf(context) {
      return match ? asKey(match({ context }), `event "${name}": match`) : '';
    },
  };
}
