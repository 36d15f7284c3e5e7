/**
 * One round on behalf of an MCP request, shared by the flow tools, prompts
 * and resources (`registerFlows.ts`) and the decision tools
 * (`decisionTools.ts`): the raw requestState is read off the request (a
 * non-string one is -32602 at once), a rejected state or unreadable params
 * become -32602 with a reason or a sentence, an unreachable ledger a logged,
 * retryable -32000 "Ledger unavailable", a duplicate of a round still running the
 * retryable -32000 `in_progress`, anything else a logged -32603 "Internal error", and a 2025-era client on stateless HTTP is told what it
 * needs instead of being asked for input it cannot give.
 */
import {
  InvalidParamsError,
  InvalidRequestStateError,
  LedgerUnavailableError,
  RoundInProgressError,
  type RoundOutcome,
} from '@baton/engine';
import { ProtocolError, ProtocolErrorCode, type ServerContext } from '@modelcontextprotocol/server';
import type { ServingMetrics } from '../observability/metrics.js';
import { type Connection, isStatelessLegacyHttp } from './callContext.js';
import { forStatelessLegacyHttp, invalidRequestState, ledgerUnavailable, roundInProgress } from './results.js';

/**
 * Play one round on behalf of a request: hands `play` the raw requestState (a non-string one is
 * -32602 at once), maps a rejected state and unreadable params to -32602, anything else to a
 * logged -32603 "Internal error", and tells a 2025-era client on stateless HTTP what it needs
 * instead of asking it for input it cannot give. Shared by the flows and the decision tools.
 * With `metrics`, each round is counted there by how it ended.
 */
export async function playRound(
  server: Connection,
  ctx: ServerContext,
  onError: (error: unknown) => void,
  play: (requestState: string | undefined) => Promise<RoundOutcome>,
  metrics?: ServingMetrics,
): Promise<RoundOutcome> {
  const requestState = ctx.mcpReq.requestState<unknown>();
  if (requestState !== undefined && typeof requestState !== 'string') {
    metrics?.invalidState('malformed');
    throw invalidRequestState({ reason: 'malformed' });
  }
  try {
    const outcome = await play(requestState);
    metrics?.outcome(outcome.type);
    // A 2025-era client on stateless HTTP declared its capabilities to another instance and
    // cannot answer input requests here: tell it what it needs instead of "not declared".
    return isStatelessLegacyHttp(server, ctx) ? forStatelessLegacyHttp(outcome) : outcome;
  } catch (error) {
    if (metrics) count(metrics, error);
    throw toProtocolError(error, onError);
  }
}

/** Count a round's error in `metrics` the way {@link toProtocolError} answers it. */
function count(metrics: ServingMetrics, error: unknown): void {
  if (error instanceof InvalidRequestStateError) metrics.invalidState(error.reason);
  else if (error instanceof LedgerUnavailableError) metrics.failure('ledger_unavailable');
  else if (error instanceof RoundInProgressError) metrics.failure('in_progress');
  else if (
    error instanceof InvalidParamsError ||
    (error instanceof ProtocolError && error.code === ProtocolErrorCode.InvalidParams)
  ) {
    metrics.failure('invalid_params');
  } else metrics.failure('internal_error');
}

/** An error of a round as the JSON-RPC error the client gets (only bad states and params say why). */
export function toProtocolError(error: unknown, onError: (error: unknown) => void): ProtocolError {
  if (error instanceof ProtocolError) return error;
  if (error instanceof InvalidRequestStateError) return invalidRequestState(error);
  if (error instanceof InvalidParamsError) return new ProtocolError(ProtocolErrorCode.InvalidParams, error.message);
  if (error instanceof RoundInProgressError) return roundInProgress(error);
  onError(error);
  if (error instanceof LedgerUnavailableError) return ledgerUnavailable();
  return new ProtocolError(ProtocolErrorCode.InternalError, 'Internal error');
}
