/**
 * The default of `resultType` for `baton call` (SEP-2322): in protocol 2026-07-28 a result
 * without `resultType` is complete, and a client must read it so (the conformance suite's
 * `sep-2322-client-request-state`, check `sep-2322-default-result-type-complete`). The SDK 2.4
 * client refuses such a result instead ("missing required resultType"), so `baton call`'s own
 * fetch supplies the default before the SDK decodes: for a request sent at 2026-07-28 (its
 * `MCP-Protocol-Version` header) answered with one JSON-RPC response in `application/json`
 * whose `result` is an object without `resultType`,
 *
 *   {"jsonrpc":"2.0","id":3,"result":{"content":[…]}}
 *   -> {"jsonrpc":"2.0","id":3,"result":{"content":[…],"resultType":"complete"}}
 *
 * Anything else (errors, SSE streams, earlier revisions, other documents) passes unchanged.
 */

/** The revision whose results carry `resultType`. */
const REVISION = '2026-07-28';

/** `response`, with `resultType: "complete"` added to a 2026-07-28 result that lacks it. */
export async function withDefaultResultType(response: Response, init: RequestInit | undefined): Promise<Response> {
  if (new Headers(init?.headers).get('mcp-protocol-version') !== REVISION) return response;
  if (!response.ok || !/^application\/json\b/i.test(response.headers.get('content-type') ?? '')) return response;
  const text = await response.clone().text();
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return response;
  }
  const m = message as { jsonrpc?: unknown; result?: unknown };
  if (m === null || typeof m !== 'object' || Array.isArray(m) || m.jsonrpc !== '2.0') return response;
  const result = m.result as Record<string, unknown> | undefined;
  if (result === null || typeof result !== 'object' || Array.isArray(result) || 'resultType' in result) {
    return response;
  }
  const headers = new Headers(response.headers);
  headers.delete('content-length');
  return new Response(JSON.stringify({ ...m, result: { ...result, resultType: 'complete' } }), {
    status: response.status,
    statusText: response.statusText,
    headers,
  });
}
