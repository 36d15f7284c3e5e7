/**
 * A flow's `progress()` reports on the wire: when a request carries
 * `_meta.progressToken`, each report of its round goes out as
 * `notifications/progress` related to that request (over HTTP the SDK then
 * answers on an SSE stream, the notifications before the result). Without a
 * token nothing is sent, as the spec asks.
 *
 * Wire: `{ method: 'notifications/progress', params: { progressToken: 'p-1', progress: 50, total: 100, message? } }`
 */
import type { FlowProgress } from '@baton/engine';
import type { ServerContext } from '@modelcontextprotocol/server';

/** Where the round's progress goes for this request; `undefined` when it asked for none. */
export function progressReporter(
  ctx: ServerContext,
  onError: (error: unknown) => void,
): ((progress: FlowProgress) => void) | undefined {
  const token = ctx.mcpReq._meta?.progressToken;
  if (typeof token !== 'string' && typeof token !== 'number') return undefined;
  return (progress) => {
    ctx.mcpReq
      .notify({ method: 'notifications/progress', params: { progressToken: token, ...progress } })
      .catch(onError);
  };
}
