/**
 * The sign-in of `baton inspect` beyond loopback: the decision pages' web
 * sign-in (`pages/webSignIn.ts`: the OpenID Connect login of
 * `pages/webLogin.ts`, authorization code with PKCE, and sealed cookies of
 * `pages/sealedCookie.ts`), under cookie names and subkey
 * purposes of their own (`baton_inspect_session`, `inspect-session`), so a
 * decision-page session on the same host never opens here, nor the other way
 * round. `/auth/login` begins it, `/auth/callback` completes it and opens a
 * session (principal, roles, display name and the CSRF token of the page's
 * POSTs), `/auth/logout` (POST) ends it. Every sign-in comes back to `/`:
 * the page keeps where it was in its URL's hash, which the server never
 * sees, so there is no return path to forge. The session is what the page
 * acts with: actions need the `operator` role in it.
 */
import type { KeyRing } from '@baton/engine';
import { escapeHtml } from '../pages/html.js';
import type { WebLogin } from '../pages/webLogin.js';
import { sessionName, webSignIn } from '../pages/webSignIn.js';

/** How long an inspect session lasts, in seconds. */
const SESSION_SECONDS = 3600;
/** How long a begun sign-in may take, in seconds. */
const LOGIN_SECONDS = 600;

/** Sign-in of the inspect page (required when it is served beyond loopback). */
export interface InspectSignIn {
  /** The OpenID Connect sign-in (its redirect URI is `<publicUrl>/auth/callback`). */
  readonly login: WebLogin;
  /** The key ring sessions are sealed under (`BATON_KEYS`). */
  readonly keys: KeyRing;
  /** The page's external origin (`--public-url`): its host is the only one answered, and POSTs must come from it. */
  readonly publicUrl: URL;
}

/** Who looks at the page, and may they act. */
export interface Viewer {
  readonly principal: string;
  readonly roles: readonly string[];
  /** For display only. */
  readonly name: string;
  /** The CSRF token the page's POSTs carry (`x-baton-csrf`). */
  readonly csrf: string;
}

/** The sign-in's routes and the session reader. */
export interface InspectSessions {
  /** The viewer of a request with a valid session, else `undefined`. */
  viewer(request: Request): Promise<Viewer | undefined>;
  /** Send the browser to the identity provider (coming back to `/`). */
  begin(): Promise<Response>;
  /** The `/auth/callback` answer: a session and back to `/`, or a page saying why not. */
  callback(request: Request): Promise<Response>;
  /** A `Set-Cookie` value ending the session. */
  clear(): string;
}

/** A small page (no script, nothing interpolated unescaped): the sign-in's problems. */
function textPage(status: number, title: string, sentence: string, headers: Record<string, string>): Response {
  const [t, said] = [escapeHtml(title), escapeHtml(sentence)];
  const body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${t}</title></head><body><h1>${t}</h1><p>${said}</p><p><a href="/auth/login">Sign in</a></p></body></html>`;
  return new Response(body, { status, headers: { ...headers, 'content-type': 'text/html; charset=utf-8' } });
}

/** Create the sessions of one inspect server; `headers`: the security headers of every answer. */
export function inspectSessions(
  options: InspectSignIn,
  headers: Readonly<Record<string, string>>,
  onError?: (error: Error) => void,
): InspectSessions {
  const sessions = webSignIn({
    login: options.login,
    keys: options.keys,
    publicUrl: options.publicUrl,
    session: { name: 'baton_inspect_session', purpose: 'inspect-session', maxAgeSeconds: SESSION_SECONDS },
    pending: { name: 'baton_inspect_login', purpose: 'inspect-login', maxAgeSeconds: LOGIN_SECONDS },
    ...(onError ? { onError } : {}),
  });
  const redirect = (location: string, cookies: readonly string[]) => {
    const h = new Headers({ ...headers, location });
    for (const cookie of cookies) h.append('set-cookie', cookie);
    return new Response(null, { status: 303, headers: h });
  };
  return {
    async viewer(request) {
      const session = await sessions.open(request);
      if (!session || typeof session.p !== 'string' || typeof session.c !== 'string') return undefined;
      return {
        principal: session.p,
        roles: Array.isArray(session.r) ? session.r : [],
        name: sessionName(session),
        csrf: session.c,
      };
    },
    async begin() {
      const { location, cookie } = await sessions.begin('/');
      return redirect(location, [cookie]);
    },
    async callback(request) {
      const done = await sessions.complete(request);
      if (done.kind === 'expired') {
        return textPage(400, 'Sign-in expired', 'This sign-in was not started here or took too long.', headers);
      }
      if (done.kind === 'failed') {
        return textPage(400, 'Sign-in failed', done.error.message, { ...headers, 'set-cookie': done.cookie });
      }
      // Always back to `/`: the page keeps where it was in its URL's hash.
      return redirect('/', done.cookies);
    },
    clear: () => sessions.clear(),
  };
}
