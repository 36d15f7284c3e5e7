/**
 * Typed helpers that declare what a flow may ask its client, one per MRTR
 * input kind: `form` and `url` elicitation, `sampling` and `roots`. Each spec
 * knows how to build its wire request from the machine's context, how to
 * validate the client's answer, and which typed event the answer becomes.
 * States ask for inputs by key (`meta: { ask: [...] }`); the catalog built
 * with `defineInputs` is the single place keys, schemas and events are named.
 * Every answer is bounded: forms by their zod schema (`.max()` shows on the
 * wire as `maxLength`), sampling and roots answers by declared sizes, so no
 * answer can inflate the next requestState past its cap unannounced.
 */
import { z } from 'zod';
import type { ElicitationSchema, InputKind, SamplingParams, WireInputRequest } from '../contract/wire.js';
import { FlowDefinitionError } from '../errors.js';
import { toElicitationSchema } from './elicitationSchema.js';

/**
 * What a declared input is: one of the client's input kinds, or `decision`: an answer someone
 * other than the caller gives through the decision tools (see {@link decision}).
 */
export type SpecKind = InputKind | 'decision';

/** The event type an answer to input `K` is delivered as. */
export type InputEventType<K extends string> = `input.${K}`;

/** `_meta` saying why a request is asked again, when it is. */
const refusedMeta = (note: string | undefined) => (note ? { _meta: { 'baton/refused': note } } : {});

/** A client workspace root. */
export interface Root {
  uri: string;
  name?: string;
}

/** What the client answered a sampling request with (validated). */
export interface SamplingResult {
  role: 'user' | 'assistant';
  content: { type: string; text?: string; [key: string]: unknown };
  model: string;
  stopReason?: string;
}

/** Where a request's text may depend on the machine's context. */
export type FromContext<T, TContext> = T | ((args: { context: TContext }) => T);

/** The event payload (without `type`) of a `form` input: the user accepted with the form's content, declined or cancelled. */
export type FormAnswer<T> = { action: 'accept'; content: T } | { action: 'decline' } | { action: 'cancel' };
/** The event payload of a `url` input: the user completed the page (`accept`), declined or cancelled. */
export type UrlAnswer = { action: 'accept' } | { action: 'decline' } | { action: 'cancel' };
/** The event payload of a `sampling` input: the client's model answered with `result`. */
export type SamplingAnswer = { action: 'accept'; result: SamplingResult };
/** The event payload of a `roots` input: the roots the client listed. */
export type RootsAnswer = { action: 'accept'; roots: Root[] };
/** The event payload of an input with `fallback: true` when the client did not declare its kind. */
export type UnsupportedAnswer = { action: 'unsupported' };

/**
 * A validated answer, or why it was not accepted: a phrase safe to show the user (it names
 * fields and limits, never echoes the value), e.g. `ticket: at most 64 characters`.
 */
export type ParsedAnswer<TAnswer> =
  | { readonly ok: true; readonly answer: TAnswer }
  | { readonly ok: false; readonly problem: string };

/**
 * A declared input: how to ask, how to read the answer.
 * `TAnswer` is the event payload the machine receives.
 */
export interface InputSpec<TAnswer = unknown, TContext = any> {
  readonly kind: SpecKind;
  /** When the client lacks this kind: deliver `{ action: 'unsupported' }` instead of failing the call. */
  readonly fallback: boolean;
  /** See {@link CommonOptions.onlyWhenAsked}. */
  readonly onlyWhenAsked: boolean;
  /** See {@link CommonOptions.sensitive}. */
  readonly sensitive?: boolean;
  /**
   * Build the wire request for the current context. `note`, when given, tells the user why
   * they are asked again (a previous answer was refused); kinds whose request shows the user
   * no text (roots) ignore it.
   */
  build(context: TContext, note?: string): WireInputRequest;
  /**
   * Validate a raw answer (attacker-controlled). The answer keeps only what the spec knows
   * (unknown form fields are dropped): it is what the machine receives and what a state holds.
   */
  parse(raw: unknown): ParsedAnswer<TAnswer>;
  /**
   * Refuse an answer over a declared size before the round's state is redeemed, with the
   * reason; `undefined` to let `parse` decide. Only kinds whose request cannot carry a note
   * (sampling, roots: nobody would see why they are asked again) refuse here; an oversized
   * form answer is asked again with the reason in its message instead.
   */
  oversized(raw: unknown): string | undefined;
  /** Stable description used in the definition hash. */
  readonly shape: unknown;
  /** Phantom: the answer type. */
  readonly __answer?: TAnswer;
}

/** Options every helper accepts. */
export interface CommonOptions {
  /**
   * When the client did not declare this input kind, deliver `{ action: 'unsupported' }`
   * so the flow can take another path. Without it the call fails with a clear error.
   */
  fallback?: boolean;
  /**
   * The answer counts only when the request was shown to the client (default `false`).
   * MRTR lets a first call (no `requestState`) carry `inputResponses` already, and Baton
   * delivers such answers to what the flow asks first. For a confirmation whose message
   * shows something computed on the server (a plan, an amount), that would let a client
   * confirm what it never saw: with `onlyWhenAsked: true` an answer sent ahead is ignored
   * and the request is shown (other answers sent ahead are still held). Answers to a
   * request that was shown (any retry with a `requestState`) are unaffected.
   */
  onlyWhenAsked?: boolean;
  /**
   * The answer is a secret: its values never reach an inspector (redacted to `'[redacted]'`)
   * nor the audit trail (even with `auditValues`). Default `false`.
   */
  sensitive?: boolean;
}

function resolve<T, C>(value: FromContext<T, C>, context: C): T {
  return typeof value === 'function' ? (value as (args: { context: C }) => T)({ context }) : value;
}

/** The length of a value's JSON encoding; `Infinity` when it has none (too deep, cyclic, bigint). */
export function jsonLength(value: unknown): number {
  try {
    return JSON.stringify(value)?.length ?? 0;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

const count = (n: number) => (Number.isFinite(n) ? n.toLocaleString('en-US') : 'too many');

/** What a zod type is called in a hint. */
const TYPE_WORDS: Record<string, string> = {
  string: 'text',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  array: 'a list',
  object: 'an object',
  bigint: 'a whole number',
  date: 'a date',
};

const FORMAT_WORDS: Record<string, string> = {
  email: 'an email address',
  url: 'a URL',
  uuid: 'a UUID',
  regex: 'in the expected format',
  date: 'a date (YYYY-MM-DD)',
  datetime: 'a date and time (ISO 8601)',
  time: 'a time (HH:MM:SS)',
  starts_with: 'in the expected format',
  ends_with: 'in the expected format',
  includes: 'in the expected format',
};

/** Whether a message is zod's own (an author's `.regex(re, 'a ticket looks like CHG-123')` is kept as written). */
const zodsOwn = (message: string) => /^(Invalid|Too (small|big)|Expected)\b/.test(message);

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let value = root;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

function sizeWords(origin: string, n: number, bound: 'least' | 'most', inclusive: boolean): string {
  const limit = count(n);
  const plural = n === 1 ? '' : 's';
  const unit =
    origin === 'string' ? ` character${plural}` : origin === 'array' || origin === 'set' ? ` item${plural}` : '';
  if (inclusive) return `at ${bound} ${limit}${unit}`;
  return `${bound === 'least' ? 'more' : 'less'} than ${limit}${unit}`;
}

/** One zod issue in words: what was wrong, never the value given. */
function describeIssue(issue: z.core.$ZodIssue, input: unknown): string {
  if (issue.path.length > 0 && valueAt(input, issue.path) === undefined) return 'required';
  switch (issue.code) {
    case 'invalid_type':
      return `must be ${TYPE_WORDS[issue.expected] ?? issue.expected}`;
    case 'invalid_value':
      return issue.values.length === 1
        ? `must be ${JSON.stringify(issue.values[0])}`
        : `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'too_small':
      return sizeWords(issue.origin, Number(issue.minimum), 'least', issue.inclusive ?? true);
    case 'too_big':
      return sizeWords(issue.origin, Number(issue.maximum), 'most', issue.inclusive ?? true);
    case 'invalid_format':
      if (!zodsOwn(issue.message)) return issue.message;
      return `must be ${FORMAT_WORDS[issue.format] ?? `a valid ${issue.format}`}`;
    case 'not_multiple_of':
      return `must be a multiple of ${String(issue.divisor)}`;
    case 'unrecognized_keys':
      return 'has fields the form does not know';
    case 'invalid_union':
      return 'matches none of the accepted shapes';
    default:
      return issue.message;
  }
}

/** A path in words: `roots[0].uri`. */
const fieldName = (path: readonly PropertyKey[]) =>
  path.map((key, i) => (typeof key === 'number' ? `[${key}]` : `${i > 0 ? '.' : ''}${String(key)}`)).join('') ||
  'answer';

/**
 * Zod issues as one user-facing phrase: field names, what was wrong and the limits, never the
 * values given (`count: must be a whole number; level: must be one of "low", "high"; note: required`).
 * `input` is what was parsed (to tell a missing field from one of the wrong type).
 */
function describeIssues(issues: readonly z.core.$ZodIssue[], input?: unknown): string {
  return issues
    .slice(0, 5)
    .map((issue) => `${fieldName(issue.path)}: ${describeIssue(issue, input)}`)
    .join('; ');
}

function withNote(message: string, note: string | undefined): string {
  return note ? `${note}\n\n${message}` : message;
}

const elicitResult = z.object({ action: z.enum(['accept', 'decline', 'cancel']), content: z.unknown().optional() });
const NOT_AN_ELICITATION_RESULT = 'action: must be "accept", "decline" or "cancel"';
const never = () => undefined;

/**
 * A form elicitation (`elicitation/create`, mode `form`). Bound every string field with
 * `.max()` (and arrays with `.max()`): the limit shows in the wire schema as `maxLength`, and
 * an answer over it is asked again with the reason in the message.
 *
 * @example
 * ```ts
 * import { form } from '@baton/engine';
 * import { z } from 'zod';
 *
 * const confirm = form({ message: ({ context }) => `Deploy ${context.version}?`, schema: z.object({ confirm: z.boolean() }) });
 * // wire: { method: 'elicitation/create', params: { mode: 'form', message: 'Deploy 1.2.3?',
 * //         requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] } } }
 * ```
 * @throws FlowDefinitionError when the schema cannot be expressed as an elicitation form.
 */
export function form<TSchema extends z.ZodObject, TContext = any>(
  options: { message: FromContext<string, TContext>; schema: TSchema } & CommonOptions,
): InputSpec<FormAnswer<z.output<TSchema>>, TContext> {
  const requestedSchema = toElicitationSchema(options.schema);
  const onlyWhenAsked = options.onlyWhenAsked ?? false;
  return {
    kind: 'form',
    fallback: options.fallback ?? false,
    onlyWhenAsked,
    ...(options.sensitive ? { sensitive: true } : {}),
    // `onlyWhenAsked` changes what a round accepts, so it is part of the definition (only when set:
    // the hash of every other form stays what it was).
    shape: { kind: 'form', requestedSchema, ...(onlyWhenAsked ? { onlyWhenAsked } : {}) },
    build: (context, note) => ({
      method: 'elicitation/create',
      params: { mode: 'form', message: withNote(resolve(options.message, context), note), requestedSchema },
    }),
    parse(raw) {
      const result = elicitResult.safeParse(raw);
      if (!result.success) return { ok: false, problem: NOT_AN_ELICITATION_RESULT };
      if (result.data.action !== 'accept') return { ok: true, answer: { action: result.data.action } };
      // The schema's output, not the raw content: unknown fields are dropped.
      const content = options.schema.safeParse(result.data.content ?? {});
      return content.success
        ? { ok: true, answer: { action: 'accept', content: content.data } }
        : { ok: false, problem: describeIssues(content.error.issues, result.data.content ?? {}) };
    },
    oversized: never,
  };
}

/**
 * A URL elicitation (`elicitation/create`, mode `url`): the user completes something out of band.
 *
 * @example wire: `{ method: 'elicitation/create', params: { mode: 'url', message: 'Sign in', url: 'https://…' } }`
 */
export function url<TContext = any>(
  options: { message: FromContext<string, TContext>; url: FromContext<string, TContext> } & CommonOptions,
): InputSpec<UrlAnswer, TContext> {
  const onlyWhenAsked = options.onlyWhenAsked ?? false;
  return {
    kind: 'url',
    fallback: options.fallback ?? false,
    onlyWhenAsked,
    ...(options.sensitive ? { sensitive: true } : {}),
    shape: { kind: 'url', ...(onlyWhenAsked ? { onlyWhenAsked } : {}) },
    build: (context, note) => ({
      method: 'elicitation/create',
      params: {
        mode: 'url',
        message: withNote(resolve(options.message, context), note),
        url: resolve(options.url, context),
      },
    }),
    parse(raw) {
      const result = elicitResult.safeParse(raw);
      return result.success
        ? { ok: true, answer: { action: result.data.action } }
        : { ok: false, problem: NOT_AN_ELICITATION_RESULT };
    },
    oversized: never,
  };
}

const samplingResult = z.object({
  role: z.enum(['user', 'assistant']),
  content: z.looseObject({ type: z.string(), text: z.string().optional() }),
  model: z.string(),
  stopReason: z.string().optional(),
});

/** Default size limit of a sampling or roots answer: characters of its JSON encoding. */
export const DEFAULT_ANSWER_MAX_LENGTH = 8000;
/** Default most roots a roots answer may list. */
export const DEFAULT_MAX_ROOTS = 100;

/** Size options of the answers that no form schema bounds (sampling, roots). */
export interface AnswerSizeOptions {
  /**
   * Most characters the answer's JSON encoding may have (default 8,000): the model's text
   * and everything around it, or all roots with their names. A larger answer is refused
   * before the state is redeemed, with a message naming the limit.
   */
  maxLength?: number;
}

function limitOption(name: string, value: number | undefined, fallback: number): number {
  const limit = value ?? fallback;
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new FlowDefinitionError(`${name} must be a positive integer, got ${String(value)}`);
  }
  return limit;
}

function tooLong(raw: unknown, maxLength: number): string | undefined {
  const length = jsonLength(raw);
  return length > maxLength
    ? `the answer is ${count(length)} characters long; at most ${count(maxLength)} are accepted`
    : undefined;
}

/**
 * A sampling request (`sampling/createMessage`): the client's model answers. The answer is
 * bounded by `maxLength` (default 8,000 characters of JSON, the model's text included).
 *
 * @example wire: `{ method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: '…' } }], maxTokens: 400 } }`
 */
export function sampling<TContext = any>(
  options: { params: FromContext<SamplingParams, TContext> } & CommonOptions & AnswerSizeOptions,
): InputSpec<SamplingAnswer, TContext> {
  const maxLength = limitOption('sampling maxLength', options.maxLength, DEFAULT_ANSWER_MAX_LENGTH);
  const onlyWhenAsked = options.onlyWhenAsked ?? false;
  const oversized = (raw: unknown) => tooLong(raw, maxLength);
  return {
    kind: 'sampling',
    fallback: options.fallback ?? false,
    onlyWhenAsked,
    ...(options.sensitive ? { sensitive: true } : {}),
    shape: {
      kind: 'sampling',
      ...(options.maxLength !== undefined ? { maxLength } : {}),
      ...(onlyWhenAsked ? { onlyWhenAsked } : {}),
    },
    // The note goes in `_meta`: nobody reads a sampling request's text as a message from the flow.
    build: (context, note) => ({
      method: 'sampling/createMessage',
      params: { ...resolve(options.params, context), ...refusedMeta(note) },
    }),
    parse(raw) {
      const tooLarge = oversized(raw);
      if (tooLarge) return { ok: false, problem: tooLarge };
      const result = samplingResult.safeParse(raw);
      return result.success
        ? { ok: true, answer: { action: 'accept', result: result.data as SamplingResult } }
        : { ok: false, problem: describeIssues(result.error.issues, raw) };
    },
    oversized,
  };
}

const rootsResult = z.object({ roots: z.array(z.object({ uri: z.string(), name: z.string().optional() })) });

/**
 * A roots listing (`roots/list`): the client's workspace roots. The answer is bounded by
 * `maxRoots` (default 100) and `maxLength` (default 8,000 characters of JSON in all).
 *
 * @example wire: `{ method: 'roots/list' }`, answer `{ roots: [{ uri: 'file:///work', name: 'work' }] }`
 */
export function roots(
  options: CommonOptions & AnswerSizeOptions & { /** Most roots accepted (default 100). */ maxRoots?: number } = {},
): InputSpec<RootsAnswer> {
  const maxLength = limitOption('roots maxLength', options.maxLength, DEFAULT_ANSWER_MAX_LENGTH);
  const maxRoots = limitOption('roots maxRoots', options.maxRoots, DEFAULT_MAX_ROOTS);
  const onlyWhenAsked = options.onlyWhenAsked ?? false;
  const oversized = (raw: unknown): string | undefined => {
    const list = typeof raw === 'object' && raw !== null ? (raw as { roots?: unknown }).roots : undefined;
    if (Array.isArray(list) && list.length > maxRoots) {
      return `the client listed ${count(list.length)} roots; at most ${count(maxRoots)} are accepted`;
    }
    return tooLong(raw, maxLength);
  };
  return {
    kind: 'roots',
    fallback: options.fallback ?? false,
    onlyWhenAsked,
    ...(options.sensitive ? { sensitive: true } : {}),
    shape: {
      kind: 'roots',
      ...(options.maxLength !== undefined ? { maxLength } : {}),
      ...(options.maxRoots !== undefined ? { maxRoots } : {}),
      ...(onlyWhenAsked ? { onlyWhenAsked } : {}),
    },
    build: (_context, note) => (note ? { method: 'roots/list', params: refusedMeta(note) } : { method: 'roots/list' }),
    parse(raw) {
      const tooLarge = oversized(raw);
      if (tooLarge) return { ok: false, problem: tooLarge };
      const result = rootsResult.safeParse(raw);
      return result.success
        ? { ok: true, answer: { action: 'accept', roots: result.data.roots } }
        : { ok: false, problem: describeIssues(result.error.issues, raw) };
    },
    oversized,
  };
}

/** A catalog of inputs a flow may ask, keyed by the request key sent on the wire. */
export type InputCatalog = Record<string, InputSpec<any, any>>;

/** The answer payload a spec delivers, plus `unsupported` for the caller's inputs (when it has a fallback). */
export type AnswerOf<S> =
  S extends DecisionSpec<any, any>
    ? S extends InputSpec<infer A, any>
      ? A
      : never
    : S extends InputSpec<infer A, any>
      ? A | UnsupportedAnswer
      : never;

/**
 * The union of events the machine receives for a catalog: one `input.<key>` event per key.
 *
 * @example
 * ```ts
 * import { defineInputs, form, type InputEvents } from '@baton/engine';
 * import { setup } from 'xstate';
 * import { z } from 'zod';
 *
 * const inputs = defineInputs({ confirm_deploy: form({ message: 'Deploy?', schema: z.object({ confirm: z.boolean() }) }) });
 * setup({ types: { events: {} as InputEvents<typeof inputs> } });
 * // { type: 'input.confirm_deploy', action: 'accept', content: { confirm: boolean } } | …
 * ```
 */
export type InputEvents<TCatalog extends InputCatalog> = {
  [K in keyof TCatalog & string]: { type: InputEventType<K> } & AnswerOf<TCatalog[K]>;
}[keyof TCatalog & string];

const KEY = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * Declare the inputs of a flow. Keys become the `inputRequests` keys on the wire.
 *
 * @throws FlowDefinitionError for keys that are not 1-64 of `[A-Za-z0-9_.-]`.
 */
export function defineInputs<const TCatalog extends InputCatalog>(catalog: TCatalog): TCatalog {
  for (const key of Object.keys(catalog)) {
    if (!KEY.test(key)) throw new FlowDefinitionError(`input key "${key}" must be 1-64 characters of [A-Za-z0-9_.-]`);
  }
  return catalog;
}

/**
 * State meta that asks for inputs of a catalog; type-checks the keys.
 *
 * @example `awaiting: { meta: ask(inputs, 'confirm_deploy', 'change_ticket'), on: { … } }`
 */
export function ask<TCatalog extends InputCatalog, K extends keyof TCatalog & string>(
  _catalog: TCatalog,
  ...keys: K[]
): { ask: K[] } {
  return { ask: keys };
}

/** The event payload (without `type`) of a decision: always accepted, with who decided. */
export interface DecisionAnswer<T> {
  readonly action: 'accept';
  readonly content: T;
  /** The deciding principal's id (never the requester's: the engine enforces four eyes). */
  readonly decider: string;
}

/** What a decision's `may` predicate is given. */
export interface MayDecideArgs<TContext> {
  /** The flow's context as parked when the decision was requested. */
  readonly context: TContext;
  /** The principal who would decide. */
  readonly principal: string;
  /** That principal's roles. */
  readonly roles: readonly string[];
}

/**
 * A declared decision: asked of someone other than the flow's caller, through the decision
 * tools (`inbox`, `decide` on the runner; `baton_inbox`, `baton_decide` over MCP).
 */
export interface DecisionSpec<TContent = unknown, TContext = any>
  extends InputSpec<DecisionAnswer<TContent>, TContext> {
  readonly kind: 'decision';
  /** The role that may decide; `undefined` when only `may` says who may. */
  readonly role: string | undefined;
  /** The rendered message for the decider. */
  message(context: TContext): string;
  /** The form the decider answers, as an elicitation schema. */
  readonly requestedSchema: ElicitationSchema;
  /** Whether `principal` with `roles` may make this decision, given the parked context. */
  mayDecide(args: MayDecideArgs<TContext>): boolean;
  /** Validate the decider's elicitation answer (attacker-controlled), like a form's. */
  parseAnswer(raw: unknown): ParsedAnswer<FormAnswer<TContent>>;
}

/** Whether a declared input is a decision. */
export function isDecision(spec: InputSpec<any, any> | undefined): spec is DecisionSpec<any, any> {
  return spec?.kind === 'decision';
}

const ROLE = /^[A-Za-z0-9_.:-]{1,64}$/;

/**
 * A decision someone other than the caller makes: four eyes. A state awaits it like an input
 * (`meta: ask(inputs, 'manager_approval')`); the caller is never asked for it. While a flow
 * awaits only decisions, its round answers "retry later" and the flow instance is parked in
 * the ledger (a flow with a decision needs a ledger). A decider finds it in the inbox, answers
 * the form (`schema`, `message`) and the machine receives
 * `{ type: 'input.<key>', action: 'accept', content, decider }`. Who may decide: `role` (the
 * decider must hold it), `may` (a predicate over the parked context and the decider), or both
 * (both must hold). The requester never decides their own request, whatever the role says.
 *
 * @example
 * ```ts
 * import { decision } from '@baton/engine';
 * import { z } from 'zod';
 *
 * export const managerApproval = decision({
 *   message: ({ context }: { context: { amount: number; purpose: string } }) =>
 *     `Approve ${context.amount} for "${context.purpose}"?`,
 *   schema: z.object({ approve: z.boolean(), comment: z.string().max(500).optional() }),
 *   role: 'manager',
 * });
 * // the decider's form: { method: 'elicitation/create', params: { mode: 'form', message: 'Approve 250 for "books"?',
 * //   requestedSchema: { type: 'object', properties: { approve: { type: 'boolean' }, comment: { type: 'string', maxLength: 500 } }, required: ['approve'] } } }
 * // the machine receives: { type: 'input.manager_approval', action: 'accept', content: { approve: true }, decider: 'bob' }
 * ```
 * @throws FlowDefinitionError without `role` or `may`, for a role that is not 1-64 of `[A-Za-z0-9_.:-]`,
 *   or a schema that cannot be expressed as an elicitation form.
 */
export function decision<TSchema extends z.ZodObject, TContext = any>(options: {
  message: FromContext<string, TContext>;
  schema: TSchema;
  role?: string;
  may?: (args: MayDecideArgs<TContext>) => boolean;
}): DecisionSpec<z.output<TSchema>, TContext> {
  const { role, may } = options;
  if (role === undefined && may === undefined) {
    throw new FlowDefinitionError('a decision needs `role` or `may` to say who may decide');
  }
  if (role !== undefined && !ROLE.test(role)) {
    throw new FlowDefinitionError(`decision role "${role}" must be 1-64 characters of [A-Za-z0-9_.:-]`);
  }
  const asForm = form({ message: options.message, schema: options.schema });
  const requestedSchema = toElicitationSchema(options.schema);
  return {
    kind: 'decision',
    fallback: false,
    onlyWhenAsked: true,
    role,
    requestedSchema,
    shape: { kind: 'decision', requestedSchema, role: role ?? null, may: may ? `fn:${may.toString()}` : null },
    message: (context) => resolve(options.message, context),
    // What the decider is shown (the decision tools ask it under the key `decision`).
    build: (context, note) => asForm.build(context, note),
    // A caller never answers a decision: its answers are never read (the round asks only the caller's keys).
    parse: () => ({ ok: false, problem: 'a decision is made through the decision tools, not by the caller' }),
    parseAnswer: (raw) => asForm.parse(raw),
    oversized: never,
    mayDecide(args) {
      if (role !== undefined && !args.roles.includes(role)) return false;
      if (may === undefined) return true;
      try {
        return may(args) === true;
      } catch {
        return false;
      }
    },
  };
}

/** The type of the event a flow receives when its requester withdraws a waiting request. */
export const WITHDRAW_EVENT = 'baton.withdraw';

/**
 * The event a flow receives when its requester withdraws a request that waits on decisions
 * (`runner.withdraw`, the `baton_withdraw` tool). Handle it in the waiting states to take the
 * flow's withdrawal path, ending in a final state (the request is then `withdrawn`).
 *
 * @example `setup({ types: { events: {} as InputEvents<typeof inputs> | WithdrawEvent } })`
 */
export interface WithdrawEvent {
  readonly type: typeof WITHDRAW_EVENT;
}
