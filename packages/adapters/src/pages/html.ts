/**
 * Server-rendered HTML for the decision pages, escaped by construction:
 * `html\`…\`` is a tagged template whose interpolations are escaped unless
 * they are already {@link SafeHtml} (or arrays of it), so a message, an
 * argument or a name (all attacker-controlled) can only ever appear as text.
 * The layout (one stylesheet from this server, no inline script or style),
 * the page answer with its security headers (a strict Content-Security-Policy
 * with `frame-ancestors 'none'`, `X-Frame-Options: DENY`,
 * `Referrer-Policy: no-referrer`, `nosniff`, no caching) and the plain
 * refusal page live here too.
 */

/** HTML that is safe to emit as is (built by {@link html} or {@link raw}). */
export class SafeHtml {
  /** @param value markup already escaped */
  constructor(readonly value: string) {}
  /** The markup. */
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text escaped for HTML content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** A value interpolated into {@link html}. */
export type HtmlValue = SafeHtml | string | number | boolean | null | undefined | readonly HtmlValue[];

function render(value: HtmlValue): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

/** Markup from a template: every interpolation is escaped unless it is {@link SafeHtml}. */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0]!;
  values.forEach((value, i) => {
    out += render(value) + strings[i + 1]!;
  });
  return new SafeHtml(out);
}

/** The Content-Security-Policy of every page: nothing but this server, no inline code, no framing. */
export const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** The headers every page answer carries. */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': PAGE_CSP,
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
  'cross-origin-opener-policy': 'same-origin',
};

/** What the header of a page says about who is signed in. */
export interface Viewer {
  readonly name: string;
  /** The sign-out form's CSRF token. */
  readonly csrf: string;
}

/** A whole page: the layout around `body`. */
export function page(title: string, body: SafeHtml, viewer?: Viewer, scripts: readonly string[] = []): SafeHtml {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title} · Baton</title>
<link rel="stylesheet" href="/pages/pages.css">
${scripts.map((src) => html`<script src="${src}" defer></script>`)}
</head>
<body>
<header class="bar">
<a class="brand" href="/inbox">Baton</a>
${
  viewer
    ? html`<form class="who" method="post" action="/auth/logout"><span>${viewer.name}</span><input type="hidden" name="_csrf" value="${viewer.csrf}"><button type="submit" class="link">Sign out</button></form>`
    : ''
}
</header>
<main>
${body}
</main>
</body>
</html>
`;
}

/** Headers as `new Headers()` takes them. */
type HeadersInit = ConstructorParameters<typeof Headers>[0];

/** An HTML answer with the page headers (and `extra`, e.g. `set-cookie`). */
export function htmlResponse(status: number, body: SafeHtml, extra: HeadersInit = {}): Response {
  const headers = new Headers(PAGE_HEADERS);
  headers.set('content-type', 'text/html; charset=utf-8');
  for (const [name, value] of new Headers(extra)) headers.append(name, value);
  return new Response(body.value, { status, headers });
}

/** A plain page saying why not (a refusal, an error), with its status. */
export function messagePage(
  status: number,
  title: string,
  sentence: string,
  viewer?: Viewer,
  links: readonly { readonly href: string; readonly text: string }[] = [],
): Response {
  const body = html`<section class="card notice" data-status="${status}">
<h1>${title}</h1>
<p class="sentence">${sentence}</p>
${links.length > 0 ? html`<ul class="choices-list">${links.map((link) => html`<li><a href="${link.href}">${link.text}</a></li>`)}</ul>` : ''}
<p><a href="/inbox">Back to your inbox</a></p>
</section>`;
  return htmlResponse(status, page(title, body, viewer));
}

/** A redirect (303) to a path of this server, with the page headers. */
export function redirect(location: string, extra: HeadersInit = {}): Response {
  const headers = new Headers(PAGE_HEADERS);
  headers.set('location', location);
  for (const [name, value] of new Headers(extra)) headers.append(name, value);
  return new Response(null, { status: 303, headers });
}

/**
 * A refusal of the server's own checks, made before a page route sees its request (given in
 * `/mcp`'s JSON-RPC shape), as a page for the person: 403 a form posted from another site (a
 * foreign `Origin`) or a page asked at another address (a foreign `Host`, DNS-rebinding
 * protection), 413 a form over the body limit; `Retry-After` kept.
 */
export async function refusalPage(refusal: Response, request: Request): Promise<Response> {
  const [title, sentence] =
    refusal.status === 413
      ? ['Too much', 'The form is larger than this page accepts.']
      : refusal.status === 403 && request.method === 'POST'
        ? ['This form cannot be accepted', 'It did not come from this page. Open the page again and try again.']
        : refusal.status === 403
          ? ['Not served at this address', 'Open the link you were sent, at the address it names.']
          : ['Not available right now', 'This page cannot be shown now. Please try again in a moment.'];
  const answer = messagePage(refusal.status, title, sentence);
  const retry = refusal.headers.get('retry-after');
  if (retry !== null) answer.headers.set('retry-after', retry);
  return answer;
}
