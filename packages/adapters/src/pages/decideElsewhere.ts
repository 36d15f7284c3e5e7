/**
 * What a decision link answers on a server without the signed-in pages:
 * `baton serve --public-url URL` puts `data.url` = `URL/decide/<id>` in
 * every `decision.requested` notification, but the pages need people to
 * sign in through an OpenID Connect issuer (`--oauth-issuer` and
 * `--login-client-id`). Without them, `/decide/<id>` and `/inbox` answer a
 * page (200, the pages' headers and stylesheet) that says how this server
 * takes decisions: the `baton_inbox` and `baton_decide` tools of an MCP
 * client, or the HTTP decision API (`GET`/`POST /api/decisions/<id>` with a
 * bearer token), naming the request of the link. `startupWarning` is the
 * one line `baton serve` prints about it.
 */

import { answeringRefusals } from '../http/routeRefusals.js';
import type { ServedRoute } from '../http/serve.js';
import { PAGES_CSS } from './assets.js';
import { html, htmlResponse, messagePage, PAGE_HEADERS, page, refusalPage } from './html.js';

/** Why the pages are not served: no issuer at all, or an issuer without the pages' web client. */
export type MissingSignIn = 'issuer' | 'login-client';

/** What the pages would need, as flags. */
const needs = (missing: MissingSignIn) =>
  missing === 'issuer' ? '--oauth-issuer and --login-client-id' : '--login-client-id';

/**
 * The start-up warning, one line.
 * @example `startupWarning('issuer')` -> `"--public-url: decision links (data.url) open a page that points to baton_decide and the decision API: the signed-in decision pages need --oauth-issuer and --login-client-id"`
 */
export function startupWarning(missing: MissingSignIn): string {
  return `--public-url: decision links (data.url) open a page that points to baton_decide and the decision API: the signed-in decision pages need ${needs(missing)}`;
}

const ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The page: how to decide here, for the request `id` when the link names one. */
function howToDecide(id: string | undefined): Response {
  const which = id === undefined ? undefined : html`<code>${id}</code>`;
  const body = html`<section class="card notice" data-status="200" data-decide="elsewhere">
<h1>Decide with your MCP client or the decision API</h1>
<p class="sentence">This server has no sign-in pages for decisions${which ? html` (this link names request ${which})` : ''}. It takes them in two ways:</p>
<ul>
<li>in an MCP client connected to this server: the <code>baton_inbox</code> tool lists what you may decide, and <code>baton_decide</code> makes a decision${which ? html` (<code>id</code>: ${which})` : ''};</li>
<li>over HTTP, with your bearer token: <code>GET /api/decisions</code> lists them, <code>GET /api/decisions/${id ?? '<id>'}</code> shows one with its form, and <code>POST</code> to the same path with <code>{"action": "accept", "content": {…}}</code> decides.</li>
</ul>
</section>`;
  return htmlResponse(200, page('How to decide', body));
}

/**
 * The routes answering decision links (`/decide/*`, `/inbox`) and the pages' stylesheet, keyed as
 * `FlowHttpHandlerOptions.routes` takes them; refusals of the server's checks are pages too.
 */
export function decideElsewhereRoutes(): ReadonlyMap<string, ServedRoute> {
  const onlyGet = (answer: (request: Request) => Response) => async (request: Request) => {
    if (request.method === 'GET' || request.method === 'HEAD') return answer(request);
    const refused = messagePage(405, 'Not here', 'This page answers GET or HEAD only.');
    refused.headers.set('allow', 'GET, HEAD');
    return refused;
  };
  const decide = onlyGet((request) => {
    const id = new URL(request.url).pathname.slice('/decide/'.length);
    return howToDecide(ID.test(id) ? id : undefined);
  });
  const css = onlyGet(
    () =>
      new Response(PAGES_CSS, {
        headers: { ...PAGE_HEADERS, 'content-type': 'text/css; charset=utf-8', 'cache-control': 'max-age=300' },
      }),
  );
  return new Map<string, ServedRoute>(
    (
      [
        ['/decide/*', decide],
        ['/inbox', onlyGet(() => howToDecide(undefined))],
        ['/pages/pages.css', css],
      ] as const
    ).map(([path, route]) => [path, answeringRefusals(route, refusalPage)]),
  );
}
