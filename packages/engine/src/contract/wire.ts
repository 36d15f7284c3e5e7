/**
 * The wire vocabulary of MRTR input requests, as types only: the input kinds
 * a client declares, the embedded requests a round sends in `inputRequests`
 * (form and URL elicitation, sampling, roots) and the restricted JSON Schema
 * of a form. Authoring (`authoring/inputs/`, `authoring/elicitationSchema.ts`)
 * builds these values; the round's outcome (`contract/outcome.ts`) and the
 * adapters carry them. A leaf: it imports nothing.
 */

/** The input kinds of MRTR, as the client declares them in its capabilities. */
export type InputKind = 'form' | 'url' | 'sampling' | 'roots';

/** An embedded request as it goes on the wire inside `inputRequests`. */
export type WireInputRequest =
  | { method: 'elicitation/create'; params: { mode: 'form'; message: string; requestedSchema: ElicitationSchema } }
  | { method: 'elicitation/create'; params: { mode: 'url'; message: string; url: string } }
  | { method: 'sampling/createMessage'; params: SamplingParams & { _meta?: RefusedAnswerMeta } }
  | { method: 'roots/list'; params?: { _meta?: RefusedAnswerMeta } };

/**
 * The `_meta` of a sampling or roots request asked again because its previous answer was
 * refused: what was wrong, in words (never the value). These requests show the user no text of
 * the flow's, and what went wrong is the client's doing, so the hint is for the client (and
 * whoever debugs it), e.g.
 * `{ 'baton/refused': 'Your previous answer was not accepted (model: required). Please answer again.' }`.
 */
export interface RefusedAnswerMeta {
  readonly 'baton/refused': string;
}

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

/** One property of a restricted elicitation schema (MCP `PrimitiveSchemaDefinition`). */
export type ElicitationProperty = Record<string, unknown> & {
  type: 'string' | 'number' | 'integer' | 'boolean' | 'array';
};

/**
 * The restricted elicitation schema sent on the wire as `requestedSchema`.
 *
 * @example
 * ```json
 * { "type": "object", "properties": { "confirm": { "type": "boolean" } }, "required": ["confirm"] }
 * ```
 */
export interface ElicitationSchema {
  type: 'object';
  properties: Record<string, ElicitationProperty>;
  required?: string[];
}
