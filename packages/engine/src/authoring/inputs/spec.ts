/**
 * What every input a flow declares shares: the `InputSpec` contract (how to
 * ask, how to read the answer, how to refuse an oversized one), the answer
 * shapes the machine receives, the options every helper accepts, and the few
 * helpers the kinds have in common (resolving a request against the context,
 * the note of a request asked again, the elicitation result). One module per
 * kind builds specs: `form.ts`, `url.ts`, `sampling.ts`, `roots.ts` and
 * `decision.ts`; `catalog.ts` names them for a flow.
 */
import { z } from 'zod';
import type { InputKind, WireInputRequest } from '../../contract/wire.js';

/**
 * What a declared input is: one of the client's input kinds, or `decision`: an answer someone
 * other than the caller gives through the decision tools (see {@link decision}).
 */
export type SpecKind = InputKind | 'decision';

/** The event type an answer to input `K` is delivered as. */
export type InputEventType<K extends string> = `input.${K}`;

/** `_meta` saying why a request is asked again, when it is. */
export const refusedMeta = (note: string | undefined) => (note ? { _meta: { 'baton/refused': note } } : {});

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
  | {
      readonly ok: false;
      readonly problem: string;
      /** The same problem field by field, when the answer's content failed its schema (forms, decisions). */
      readonly issues?: readonly AnswerIssue[];
    };

/** One field of a refused answer: its path in words (`roots[0].uri`, `answer` for the whole) and what was wrong. */
export interface AnswerIssue {
  readonly field: string;
  readonly hint: string;
}

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

/** A request text or value, resolved against the machine's context when it is a function. */
export function resolve<T, C>(value: FromContext<T, C>, context: C): T {
  return typeof value === 'function' ? (value as (args: { context: C }) => T)({ context }) : value;
}

/** A message with the reason it is asked again in front, when there is one. */
export function withNote(message: string, note: string | undefined): string {
  return note ? `${note}\n\n${message}` : message;
}

/** The shape of an elicitation result (form and URL): the action and, for a form, the content. */
export const elicitResult = z.object({
  action: z.enum(['accept', 'decline', 'cancel']),
  content: z.unknown().optional(),
});

/** Why an answer that is not an elicitation result is refused. */
export const NOT_AN_ELICITATION_RESULT = 'action: must be "accept", "decline" or "cancel"';

/** `InputSpec.oversized` of the kinds whose size the answer's own schema bounds: never refused early. */
export const never = () => undefined;
