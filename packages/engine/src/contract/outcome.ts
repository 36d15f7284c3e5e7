/**
 * What one round returns, independent of any transport. Adapters map
 * `complete` to a complete MCP result, `input_required` to
 * `{ resultType: 'input_required', inputRequests, requestState }`, and `error`
 * to a tool error result (`isError: true`) with the message as text. Types
 * only; it imports nothing but the wire vocabulary (`wire.ts`).
 */
import type { ContentBlock } from './content.js';
import type { InputKind, WireInputRequest } from './wire.js';

export type { ContentBlock } from './content.js';

/**
 * What a finished flow returns; adapters map it to `CallToolResult` (as it is),
 * `GetPromptResult` (one `user` message per block) or `ReadResourceResult` (text
 * blocks joined into one text item, image and audio blocks as `blob` items, embedded
 * resources as their own contents; `structuredContent` as one JSON item).
 *
 * Wire (`tools/call`, a tool error): `{ content: [{ type: 'text', text: 'Out of stock' }], isError: true }`
 */
export interface FlowResult {
  /** Content of every kind (`authoring/content.ts` builds them: `text()`, `image()`, …). */
  content: ContentBlock[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

interface OutcomeBase {
  /** The flow's name. */
  readonly flow: string;
  /** The flow-instance id, the same for every round of one run. */
  readonly fid: string;
  /** Rounds served in this run, this one included (1 for the first request). */
  readonly round: number;
}

/** The flow finished; `result` is built from the machine's output. */
export interface CompleteOutcome extends OutcomeBase {
  readonly type: 'complete';
  readonly result: FlowResult;
}

/** The flow waits for input; the client retries with answers and the `requestState`. */
export interface InputRequiredOutcome extends OutcomeBase {
  readonly type: 'input_required';
  /** Requests keyed by input key; empty when only a deadline is pending (the client just retries). */
  readonly inputRequests: Readonly<Record<string, WireInputRequest>>;
  readonly requestState: string;
}

/** The flow failed; `message` is safe to show to the user (never a stack trace). */
export interface ErrorOutcome extends OutcomeBase {
  readonly type: 'error';
  readonly message: string;
  /** Set when the flow asks for an input kind the client did not declare and has no fallback for. */
  readonly undeclared?: { readonly key: string; readonly kind: InputKind };
}

/** The result of one round. */
export type RoundOutcome = CompleteOutcome | InputRequiredOutcome | ErrorOutcome;
