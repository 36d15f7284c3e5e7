/**
 * The web sign-in both browser surfaces share, the decision pages
 * (`routes.ts`) and the inspect page beyond loopback (`inspect/signIn.ts`):
 * the OpenID Connect login (`webLogin.ts`) wired to two sealed cookies
 * (`sealedCookie.ts`), one for the login begun and one for the session it
 * opens (principal, roles, display name and a fresh CSRF token). Each
 * surface names its own cookies and subkey purposes, so a session of one
 * never opens on the other, and answers in its own pages: this module only
 * says what happened (`expired`, `failed`, `signedIn`) and which
 * `Set-Cookie` values go with it.
 */
import { randomBytes } from 'node:crypto';
import type { KeyRing } from '@baton/engine';
import { sealedCookie } from './sealedCookie.js';
import { type PendingLogin, SignInError, type WebLogin } from './webLogin.js';

/** The sealed session: who signed in, and the CSRF token of their forms. */
export interface WebSession {
  /** Principal. */
  readonly p: string;
  /** Roles. */
  readonly r: readonly string[];
  /** Display name. */
  readonly n?: string;
  /** CSRF token. */
  readonly c: string;
}

/** A sealed cookie's name and subkey purpose, e.g. `{ name: 'baton_session', purpose: 'page-session' }`. */
export interface WebCookie {
  readonly name: string;
  readonly purpose: string;
  /** How long it lasts, in seconds. */
  readonly maxAgeSeconds: number;
}

/** Options of {@link webSignIn}. */
export interface WebSignInOptions {
  /** The OpenID Connect sign-in (its redirect URI is `<publicUrl>/auth/callback`). */
  readonly login: WebLogin;
  /** The key ring the cookies are sealed under (`BATON_KEYS`). */
  readonly keys: KeyRing;
  /** The external origin (`--public-url`): whether cookies are `Secure` is read from it. */
  readonly publicUrl: URL;
  /** The session's cookie. */
  readonly session: WebCookie;
  /** The cookie of a login begun and not finished yet. */
  readonly pending: WebCookie;
  /** Sign-in failures (reporting only; never a token or principal). */
  readonly onError?: (error: Error) => void;
}

/**
 * How a callback ended: `expired` (no pending login: not begun here, or too slow); `failed` (the
 * issuer or the checks said no; `cookie` clears the pending login); `signedIn` (`cookies` clear
 * the pending login and set the session; go back to `returnTo`).
 */
export type SignInCompletion =
  | { readonly kind: 'expired' }
  | { readonly kind: 'failed'; readonly error: SignInError; readonly cookie: string }
  | { readonly kind: 'signedIn'; readonly returnTo: string; readonly cookies: readonly string[] };

/** The sign-in of one surface. */
export interface WebSignIn {
  /** The session a request carries, if it carries a valid one. */
  open(request: Request): Promise<WebSession | undefined>;
  /** Begin a sign-in coming back to `returnTo`: where to send the browser, and the pending login's cookie. */
  begin(returnTo: string): Promise<{ readonly location: string; readonly cookie: string }>;
  /** Complete the sign-in `/auth/callback` receives. */
  complete(request: Request): Promise<SignInCompletion>;
  /** A `Set-Cookie` value ending the session. */
  clear(): string;
}

/** Whether cookies for `url` may be `Secure`: https, or anything but plain http on loopback. */
export function secureFor(url: URL): boolean {
  if (url.protocol === 'https:') return true;
  return !['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
}

/** The name shown for a session: its display name, else the principal's part after `#`. */
export function sessionName(session: WebSession): string {
  return session.n ?? session.p.slice(session.p.lastIndexOf('#') + 1);
}

/** The sign-in of one surface, on its own cookies. */
export function webSignIn(options: WebSignInOptions): WebSignIn {
  const { login, keys } = options;
  const secure = secureFor(options.publicUrl);
  const sessions = sealedCookie<WebSession>({ keys, ...options.session, secure });
  const logins = sealedCookie<PendingLogin>({ keys, ...options.pending, secure });
  return {
    open: (request) => sessions.open(request),
    async begin(returnTo) {
      const { url, pending } = await login.begin(returnTo);
      return { location: url.href, cookie: await logins.seal(pending) };
    },
    async complete(request) {
      const pending = await logins.open(request);
      if (!pending) return { kind: 'expired' };
      try {
        const who = await login.complete(new URL(request.url), pending);
        const session: WebSession = {
          p: who.principal,
          r: [...who.roles],
          ...(who.name ? { n: who.name } : {}),
          c: randomBytes(24).toString('base64url'),
        };
        return {
          kind: 'signedIn',
          returnTo: pending.returnTo,
          cookies: [logins.clear(), await sessions.seal(session)],
        };
      } catch (error) {
        if (!(error instanceof SignInError)) throw error;
        options.onError?.(error);
        return { kind: 'failed', error, cookie: logins.clear() };
      }
    },
    clear: () => sessions.clear(),
  };
}
