/**
 * The server's refusals in each route's own format. The checks that run
 * before a route sees its request (Host and Origin against DNS rebinding,
 * the body limit) answer as `/mcp` does, in JSON-RPC; a route that promises
 * problem details (the events endpoint) or pages for people (the decision
 * pages) says how its refusals read instead, as a {@link ServedRoute} with
 * `refused`. `problemRefusals` turns them into `application/problem+json`
 * (`problem.ts`), keeping status, `WWW-Authenticate` and `Retry-After`.
 */

import { fromRefusal } from './problem.js';
import type { ServedRoute } from './serve.js';

/** `route`, answering the server's refusals with `refused`. */
export function answeringRefusals(
  route: (request: Request) => Promise<Response>,
  refused: (refusal: Response, request: Request) => Promise<Response>,
): ServedRoute {
  return Object.assign((request: Request) => route(request), { refused });
}

/**
 * `route`, answering the server's refusals as problem details: a POST of 2 MiB to it answers
 * `413 application/problem+json` with
 * `{"type":"urn:baton:problem:too_large","title":"Request body too large","status":413,"detail":"Request body exceeds 1048576 bytes","reason":"too_large"}`.
 */
export function problemRefusals(route: (request: Request) => Promise<Response>): ServedRoute {
  return answeringRefusals(route, (refusal) => fromRefusal(refusal));
}
