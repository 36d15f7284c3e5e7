/**
 * The engine's round outcomes on the MCP wire, one mapping per method that
 * may answer `input_required`. `input_required` becomes the SDK's
 * input-required result for all three; `complete` becomes a `CallToolResult`,
 * prompt messages, or resource contents (text and blobs); `error` becomes a tool error
 * result (`isError: true`) for tools and a JSON-RPC error for prompts and
 * resources, which have no error result. A rejected requestState is always
 * the JSON-RPC error -32602 "Invalid or expired requestState" with
 * `data: { reason }`: never a re-prompt. A 2025-era client on stateless HTTP,
 * which cannot answer input requests there, gets a flow error saying it needs a
 * 2026-07-28 client ({@link forStatelessLegacyHttp}).
 */
import {
  type FlowResult,
  INVALID_REQUEST_STATE_MESSAGE,
  type InvalidRequestStateError,
  LEDGER_RETRY_AFTER_MS,
  type RoundInProgressError,
  type RoundOutcome,
} from '@baton/engine';
import {
  type CallToolResult,
  type GetPromptResult,
  type InputRequests,
  type InputRequiredResult,
  inputRequired,
  type PromptMessage,
  ProtocolError,
  ProtocolErrorCode,
  type ReadResourceResult,
} from '@modelcontextprotocol/server';

/**
 * The JSON-RPC error for a rejected requestState.
 *
 * Wire: `{ code: -32602, message: 'Invalid or expired requestState', data: { reason: 'replayed' } }`
 */
export function invalidRequestState(error: Pick<InvalidRequestStateError, 'reason'>): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.InvalidParams, INVALID_REQUEST_STATE_MESSAGE, { reason: error.reason });
}

/** JSON-RPC's implementation-defined "server error" range: the ledger could not be reached. */
export const LEDGER_UNAVAILABLE_CODE = -32000;

/**
 * The JSON-RPC error for a round whose ledger could not be reached (its database restarting,
 * say). Nothing was acknowledged: retry the same request, with the same requestState, later.
 *
 * Wire: `{ code: -32000, message: 'Ledger unavailable, retry later', data: { reason: 'ledger_unavailable', retryAfterMs: 1000 } }`
 */
export function ledgerUnavailable(): ProtocolError {
  return new ProtocolError(LEDGER_UNAVAILABLE_CODE as ProtocolErrorCode, 'Ledger unavailable, retry later', {
    reason: 'ledger_unavailable',
    retryAfterMs: LEDGER_RETRY_AFTER_MS,
  });
}

/**
 * The JSON-RPC error for a duplicate of a round still running (the same requestState and answers
 * while its first round has not finished): retryable, never final. Retry the same request after
 * `retryAfterMs`; it is then answered with the round's recorded outcome.
 *
 * Wire: `{ code: -32000, message: 'Round still in progress, retry the same request later', data: { reason: 'in_progress', retryAfterMs: 1000 } }`
 */
export function roundInProgress(error: Pick<RoundInProgressError, 'retryAfterMs'>): ProtocolError {
  return new ProtocolError(
    LEDGER_UNAVAILABLE_CODE as ProtocolErrorCode,
    'Round still in progress, retry the same request later',
    { reason: 'in_progress', retryAfterMs: error.retryAfterMs },
  );
}

/** What a 2025-era client on stateless HTTP is told when a flow needs its input. */
export const LEGACY_HTTP_MESSAGE =
  'This tool asks for input over several rounds, which over HTTP needs an MCP client that speaks protocol ' +
  '2026-07-28; this client speaks an earlier revision. Use a 2026-07-28 client, or connect over stdio, ' +
  'which serves 2025-era clients too.';

/**
 * A round's outcome for a 2025-era client on stateless HTTP: it cannot answer input requests
 * there (no per-request capabilities, no channel for server-to-client requests), so a flow
 * that asks (`input_required`, or an input kind "not declared") ends in a flow error with
 * {@link LEGACY_HTTP_MESSAGE}. Complete results and other errors pass through unchanged.
 *
 * Wire (tools): `{ resultType: 'complete', content: [{ type: 'text', text: LEGACY_HTTP_MESSAGE }], isError: true }`
 */
export function forStatelessLegacyHttp(outcome: RoundOutcome): RoundOutcome {
  if (outcome.type === 'complete' || (outcome.type === 'error' && !outcome.undeclared)) return outcome;
  const { flow, fid, round } = outcome;
  return { type: 'error', flow, fid, round, message: LEGACY_HTTP_MESSAGE };
}

/**
 * `{ resultType: 'input_required', inputRequests?, requestState }`; `inputRequests`
 * is left out when only a deadline is pending (the client just retries).
 */
function toInputRequired(outcome: Extract<RoundOutcome, { type: 'input_required' }>): InputRequiredResult {
  const keys = Object.keys(outcome.inputRequests);
  return inputRequired({
    ...(keys.length > 0 ? { inputRequests: outcome.inputRequests as unknown as InputRequests } : {}),
    requestState: outcome.requestState,
  });
}

/**
 * A round's outcome as a `tools/call` result.
 *
 * Wire (complete): `{ resultType: 'complete', content: [...], structuredContent?, isError? }`;
 * (error): `{ resultType: 'complete', content: [{ type: 'text', text: message }], isError: true }`.
 */
export function toToolResult(outcome: RoundOutcome): CallToolResult | InputRequiredResult {
  switch (outcome.type) {
    case 'input_required':
      return toInputRequired(outcome);
    case 'error':
      return { content: [{ type: 'text', text: outcome.message }], isError: true };
    case 'complete':
      return outcome.result as CallToolResult;
  }
}

function textOf(result: FlowResult): string {
  return result.content
    .map((block) => (block.type === 'text' && typeof block.text === 'string' ? block.text : ''))
    .filter((text) => text.length > 0)
    .join('\n');
}

/** A flow error (or a result marked `isError`) on a method without error results: JSON-RPC -32603 with the safe message. */
function flowFailure(message: string): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.InternalError, message);
}

/**
 * A round's outcome as a `prompts/get` result: every content block of the
 * flow's result becomes one `user` message.
 *
 * Wire (complete): `{ resultType: 'complete', description, messages: [{ role: 'user', content: { type: 'text', text } }] }`.
 * @throws ProtocolError -32603 with the flow's message for an error outcome.
 */
export function toPromptResult(outcome: RoundOutcome, description?: string): GetPromptResult | InputRequiredResult {
  if (outcome.type === 'input_required') return toInputRequired(outcome);
  if (outcome.type === 'error') throw flowFailure(outcome.message);
  if (outcome.result.isError) throw flowFailure(textOf(outcome.result) || 'The flow failed.');
  const messages = outcome.result.content.map(
    (content) => ({ role: 'user', content }) as unknown as PromptMessage,
  ) satisfies PromptMessage[];
  return { ...(description ? { description } : {}), messages };
}

/**
 * A round's outcome as a `resources/read` result. `structuredContent` becomes one JSON item;
 * otherwise the text blocks are joined into one text item (in `mimeType`, default `text/plain`),
 * each image or audio block becomes a `blob` item with its own `mimeType`, and each embedded
 * resource its contents as they are (its own URI). Resource links, which have no contents, are
 * left out; a result with no contents at all is one empty text item.
 *
 * Wire (complete): `{ resultType: 'complete', contents: [{ uri, mimeType: 'text/plain', text }, { uri, mimeType: 'image/png', blob }] }`.
 * @throws ProtocolError -32603 with the flow's message for an error outcome.
 */
export function toResourceResult(
  outcome: RoundOutcome,
  uri: string,
  mimeType = 'text/plain',
): ReadResourceResult | InputRequiredResult {
  if (outcome.type === 'input_required') return toInputRequired(outcome);
  if (outcome.type === 'error') throw flowFailure(outcome.message);
  const { result } = outcome;
  if (result.isError) throw flowFailure(textOf(result) || 'The flow failed.');
  if (result.structuredContent !== undefined) {
    return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(result.structuredContent) }] };
  }
  const contents: ReadResourceResult['contents'] = [];
  let textDone = false;
  for (const block of result.content) {
    if (block.type === 'text' && !textDone) {
      // Every text block, joined, where the first one was.
      textDone = true;
      contents.push({ uri, mimeType, text: textOf(result) });
    } else if (block.type === 'image' || block.type === 'audio') {
      contents.push({ uri, mimeType: block.mimeType, blob: block.data });
    } else if (block.type === 'resource') {
      contents.push({ ...block.resource });
    }
  }
  return { contents: contents.length > 0 ? contents : [{ uri, mimeType, text: '' }] };
}
