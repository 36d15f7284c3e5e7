/**
 * Decision links: `baton serve --public-url URL` names the server's external
 * base, and every `decision.requested` notification then carries
 * `data.url` = `<URL>/decide/<id>` (with `?key=<key>` when the request awaits
 * more than one decision at once), the signed-in decision page. The link
 * carries no secret: whoever opens it signs in, and the page checks they may
 * decide. The engine knows no HTTP: it is handed the builder
 * (`RunnerOptions.decisionUrl`).
 */

/** Where the decision page answers, under the public URL. */
export const DECIDE_PAGE_PATH = '/decide';

/**
 * `--public-url`: an absolute http: or https: URL without query, fragment or credentials; the
 * trailing `/` is dropped (`https://baton.example.com/` and `https://baton.example.com` are one).
 * @throws TypeError with a one-line message otherwise.
 * @example `parsePublicUrl('https://baton.example.com/approvals/')` -> `'https://baton.example.com/approvals'`
 */
export function parsePublicUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(`--public-url expects an absolute http: or https: URL, got "${value}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`--public-url expects an absolute http: or https: URL, got "${value}"`);
  }
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    throw new TypeError(`--public-url must have no query, fragment or credentials, got "${value}"`);
  }
  return url.href.replace(/\/+$/, '');
}

/**
 * The decision page's URL builder for `RunnerOptions.decisionUrl`, on a base from {@link parsePublicUrl}.
 * @example `decisionPageUrl('https://baton.example.com')('R7x…', 'finance_approval')` -> `'https://baton.example.com/decide/R7x…?key=finance_approval'`
 */
export function decisionPageUrl(base: string): (id: string, key: string) => string {
  return (id, key) => `${base}${DECIDE_PAGE_PATH}/${encodeURIComponent(id)}?key=${encodeURIComponent(key)}`;
}
