/**
 * Typed helpers that declare what a flow may ask its client, one per MRTR
 * input kind: `form` and `url` elicitation, `sampling` and `roots`. Each spec
 * knows how to build its wire request from the machine's context, how to
 * validate the client's answer, and which typed event the answer becomes.
 * States ask for inputs by key (`meta: { ask: [...] }`); the catalog built
 * with `defineInputs` is the single place keys, schemas and events are named.
 */
import { z } from 'zod';
import { type ElicitationSchema, toElicitationSchema } from './elicitationSchema.js';
import { FlowDefinitionError } from './errors.js';

/** The input kinds of MRTR, as the client declares them in its capabilities. */
export type InputKind = 'form' | 'url' | 'sampling' | 'roots';

/** The event type an answer to input `K` is delivered as. */
export type InputEventType<K extends string> = `input.${K}`;

/** An embedded request as it goes on the wire inside `inputRequests`. */
export type WireInputRequest =
  | { method: 'elicitation/create'; params: { mode: 'form'; message: string; requestedSchema: ElicitationSchema } }
  | { method: 'elicitation/create'; params: { mode: 'url'; message: string; url: string } }
  | { method: 'sampling/createMessage'; params: SamplingParams }
  | { method: 'roots/list'; params?: Record<string, never> };

/** A text message for sampling. */
export interface SamplingMessage {
  role: 'user' | 'assistant';
  content: { type: 'text'; text: string };
}

/** Parameters of a `sampling/createMessage` request (the text subset Baton builds). */
export interface SamplingParams {
  messages: SamplingMessage[];
  maxTokens: number;
  systemPrompt?: string;
  temperature?: number;
  stopSequences?: string[];
  modelPreferences?: Record<string, unknown>;
}

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

/** Event payloads (without `type`) per kind; `unsupported` is the declared fallback when the client lacks the kind. */
export type FormAnswer<T> = { action: 'accept'; content: T } | { action: 'decline' } | { action: 'cancel' };
export type UrlAnswer = { action: 'accept' } | { action: 'decline' } | { action: 'cancel' };
export type SamplingAnswer = { action: 'accept'; result: SamplingResult };
export type RootsAnswer = { action: 'accept'; roots: Root[] };
export type UnsupportedAnswer = { action: 'unsupported' };

/**
 * A declared input: how to ask, how to read the answer.
 * `TAnswer` is the event payload the machine receives.
 */
export interface InputSpec<TAnswer = unknown, TContext = any> {
  readonly kind: InputKind;
  /** When the client lacks this kind: deliver `{ action: 'unsupported' }` instead of failing the call. */
  readonly fallback: boolean;
  /** Build the wire request for the current context. */
  build(context: TContext): WireInputRequest;
  /** Validate a raw answer; `undefined` when it does not match the request. */
  parse(raw: unknown): TAnswer | undefined;
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
}

function resolve<T, C>(value: FromContext<T, C>, context: C): T {
  return typeof value === 'function' ? (value as (args: { context: C }) => T)({ context }) : value;
}

const elicitResult = z.object({ action: z.enum(['accept', 'decline', 'cancel']), content: z.unknown().optional() });

/**
 * A form elicitation (`elicitation/create`, mode `form`).
 *
 * @example
 * ```ts
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
  return {
    kind: 'form',
    fallback: options.fallback ?? false,
    shape: { kind: 'form', requestedSchema },
    build: (context) => ({
      method: 'elicitation/create',
      params: { mode: 'form', message: resolve(options.message, context), requestedSchema },
    }),
    parse(raw) {
      const result = elicitResult.safeParse(raw);
      if (!result.success) return undefined;
      if (result.data.action !== 'accept') return { action: result.data.action };
      const content = options.schema.safeParse(result.data.content ?? {});
      return content.success ? { action: 'accept', content: content.data } : undefined;
    },
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
  return {
    kind: 'url',
    fallback: options.fallback ?? false,
    shape: { kind: 'url' },
    build: (context) => ({
      method: 'elicitation/create',
      params: { mode: 'url', message: resolve(options.message, context), url: resolve(options.url, context) },
    }),
    parse(raw) {
      const result = elicitResult.safeParse(raw);
      return result.success ? { action: result.data.action } : undefined;
    },
  };
}

const samplingResult = z.object({
  role: z.enum(['user', 'assistant']),
  content: z.looseObject({ type: z.string(), text: z.string().optional() }),
  model: z.string(),
  stopReason: z.string().optional(),
});

/**
 * A sampling request (`sampling/createMessage`): the client's model answers.
 *
 * @example wire: `{ method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: '…' } }], maxTokens: 400 } }`
 */
export function sampling<TContext = any>(
  options: { params: FromContext<SamplingParams, TContext> } & CommonOptions,
): InputSpec<SamplingAnswer, TContext> {
  return {
    kind: 'sampling',
    fallback: options.fallback ?? false,
    shape: { kind: 'sampling' },
    build: (context) => ({ method: 'sampling/createMessage', params: resolve(options.params, context) }),
    parse(raw) {
      const result = samplingResult.safeParse(raw);
      return result.success ? { action: 'accept', result: result.data as SamplingResult } : undefined;
    },
  };
}

const rootsResult = z.object({ roots: z.array(z.object({ uri: z.string(), name: z.string().optional() })) });

/**
 * A roots listing (`roots/list`): the client's workspace roots.
 *
 * @example wire: `{ method: 'roots/list' }`, answer `{ roots: [{ uri: 'file:///work', name: 'work' }] }`
 */
export function roots(options: CommonOptions = {}): InputSpec<RootsAnswer> {
  return {
    kind: 'roots',
    fallback: options.fallback ?? false,
    shape: { kind: 'roots' },
    build: () => ({ method: 'roots/list' }),
    parse(raw) {
      const result = rootsResult.safeParse(raw);
      return result.success ? { action: 'accept', roots: result.data.roots } : undefined;
    },
  };
}

/** A catalog of inputs a flow may ask, keyed by the request key sent on the wire. */
export type InputCatalog = Record<string, InputSpec<any, any>>;

/** The answer payload a spec delivers, plus `unsupported` when it has a fallback. */
export type AnswerOf<S> = S extends InputSpec<infer A, any> ? A | UnsupportedAnswer : never;

/**
 * The union of events the machine receives for a catalog: one `input.<key>` event per key.
 *
 * @example
 * ```ts
 * setup({ types: { events: {} as InputEvents<typeof inputs> } })
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
