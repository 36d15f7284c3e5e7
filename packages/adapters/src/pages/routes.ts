/**
 * The decision pages on the `baton serve` port (DESIGN.md section 5b):
 * `/inbox` (what the signed-in person may decide, refreshed live),
 * `/decide/<id>` (`?key=` when a request has several decisions: the request
 * and its form; POST submits it once), and the sign-in around them:
 * `/auth/login` (begins OpenID Connect authorization code with PKCE),
 * `/auth/callback` (completes it and opens a session) and `/auth/logout`.
 * A decision link carries no secret: opening it without a session leads to
 * the sign-in, then back. Sessions and pending logins are sealed cookies
 * (`sealedCookie.ts`, wired to the login in `webSignIn.ts`), so any instance with the same `BATON_KEYS` serves any
 * page. Every POST is checked twice against cross-site forgery: its `Origin`
 * (or, as `no-referrer` makes browsers send `Origin: null`, its `Sec-Fetch-Site`) must be this
 * site, and its `_csrf` field must equal
 * the token sealed in the session. Who may decide, and whether an answer is
 * valid, is the engine's to say (`decisionPort.ts`); refusals are plain
 * pages with their HTTP status (403 four eyes or role, 404 unknown, 409
 * already decided, 410 expired or ended).
 */
import { timingSafeEqual } from 'node:crypto';
import type { KeyRing } from '@baton/engine';
import { answeringRefusals } from '../http/routeRefusals.js';
import type { ServedRoute } from '../http/serve.js';
import { INBOX_JS, PAGES_CSS } from './assets.js';
import { type PageCaller, type PageDecisions, REFUSAL_TITLES, type Refused, refusalStatus } from './decisionPort.js';
import { readAnswer, submittedFields } from './form.js';
import { htmlResponse, messagePage, PAGE_HEADERS, page, redirect, refusalPage, type Viewer } from './html.js';
import { decideBody, decideHref, inboxBody, inboxList, outcomeBody } from './views.js';
import type { WebLogin } from './webLogin.js';
import { sessionName, type WebSession, webSignIn } from './webSignIn.js';

/** How long a session lasts, in seconds (then the person signs in again, usually without typing). */
export const SESSION_SECONDS = 3600;
/** How long a begun sign-in may take, in seconds. */
export const LOGIN_SECONDS = 600;
/** Largest form body read, in bytes. */
const MAX_FORM_BYTES = 64 * 1024;

/** A route: answers one path (or, keyed `/decide/*`, every path under it). */
type Route = (request: Request) => Promise<Response>;

/** Options of {@link createDecisionPages}. */
export interface DecisionPagesOptions {
  /** The engine, as the pages use it. */
  readonly decisions: PageDecisions;
  /** The OpenID Connect sign-in (its redirect URI is `<publicUrl>/auth/callback`). */
  readonly login: WebLogin;
  /** The server's key ring: sessions are sealed under subkeys of it. */
  readonly keys: KeyRing;
  /** The pages' external base URL (`--public-url`): the origin POSTs must come from. */
  readonly publicUrl: URL;
  /** How often the inbox refreshes, ms (default 5000). */
  readonly inboxPollMs?: number;
  /** Failures that are not the visitor's doing (reporting only; never a token or principal). */
  readonly onError?: (error: Error) => void;
}

/** The session: who signed in, and the CSRF token of their forms. */
type Session = WebSession;

const RETURN_PATH = /^\/(?:inbox|decide\/[A-Za-z0-9_-]{1,64}(?:\?key=[A-Za-z0-9_.-]{1,64})?)$/;

/** A path of these pages to come back to after signing in (anything else: the inbox). */
export function safeReturnPath(value: string | null): string {
  return value && RETURN_PATH.test(value) ? value : '/inbox';
}

const same = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/**
 * The routes, keyed as `FlowHttpHandlerOptions.routes` takes them; the server's own refusals
 * (a foreign Origin or Host, a body over the limit) are answered as pages too.
 */
export function createDecisionPages(options: DecisionPagesOptions): ReadonlyMap<string, ServedRoute> {
  const { decisions, login, keys, publicUrl } = options;
  const sessions = webSignIn({
    login,
    keys,
    publicUrl,
    session: { name: 'baton_session', purpose: 'page-session', maxAgeSeconds: SESSION_SECONDS },
    pending: { name: 'baton_login', purpose: 'page-login', maxAgeSeconds: LOGIN_SECONDS },
    ...(options.onError ? { onError: options.onError } : {}),
  });
  const pollMs = options.inboxPollMs ?? 5000;

  const viewerOf = (session: Session): Viewer => ({
    name: sessionName(session),
    csrf: session.c,
  });
  const callerOf = (session: Session): PageCaller => ({
    principal: session.p,
    roles: session.r,
    ...(session.n ? { displayName: session.n } : {}),
  });

  /** Begin a sign-in that comes back to `returnTo`. */
  const signIn = async (returnTo: string) => {
    const { location, cookie } = await sessions.begin(returnTo);
    return redirect(location, { 'set-cookie': cookie });
  };

  /** The path and query of a request, as a return path. */
  const here = (request: Request) => {
    const url = new URL(request.url);
    return safeReturnPath(`${url.pathname}${url.search}`);
  };

  /**
   * Whether a POST comes from these pages: its `Origin` is the public origin; or, when the browser
   * sends `Origin: null` (what `Referrer-Policy: no-referrer` makes it send for a form post) or
   * none, its `Sec-Fetch-Site` (set by the browser, never by a page) says `same-origin`. A client
   * sending neither header is no browser a forged form could drive; the CSRF token still applies.
   */
  const sameSite = (request: Request) => {
    const origin = request.headers.get('origin');
    if (origin === publicUrl.origin) return true;
    if (origin !== null && origin !== 'null') return false;
    const site = request.headers.get('sec-fetch-site');
    return site === 'same-origin' || (site === null && origin === null);
  };

  /** A POST's form fields, once its origin and CSRF token are checked; or the refusal page. */
  const checkedForm = async (request: Request, session: Session): Promise<URLSearchParams | Response> => {
    const forged = () =>
      messagePage(
        403,
        'This form cannot be accepted',
        'It did not come from this page, or it is out of date. Reload the page and try again.',
        viewerOf(session),
      );
    if (!sameSite(request)) return forged();
    const type = request.headers.get('content-type') ?? '';
    if (!type.startsWith('application/x-www-form-urlencoded')) return forged();
    const body = await request.arrayBuffer();
    if (body.byteLength > MAX_FORM_BYTES) {
      return messagePage(413, 'Too much', 'The form is larger than this page accepts.', viewerOf(session));
    }
    const form = new URLSearchParams(new TextDecoder().decode(body));
    const token = form.get('_csrf');
    return token !== null && same(token, session.c) ? form : forged();
  };

  const refusal = (refused: Refused, session: Session, id: string) => {
    const by = refused.decided
      ? ` It was decided by ${refused.decided.by}${refused.decided.at !== undefined ? ` at ${new Date(refused.decided.at).toISOString().slice(0, 16).replace('T', ' ')} UTC` : ''}.`
      : '';
    return messagePage(
      refusalStatus(refused.reason),
      REFUSAL_TITLES[refused.reason],
      `${refused.message}${by}`,
      viewerOf(session),
      (refused.keys ?? []).map((key) => ({ href: decideHref(id, key), text: `Decide ${key}` })),
    );
  };

  /** Run a page handler, turning unexpected failures into a 500 page (reported, not shown). */
  const guarded =
    (handler: Route): Route =>
    async (request) => {
      try {
        return await handler(request);
      } catch (error) {
        options.onError?.(error as Error);
        return messagePage(500, 'Something went wrong', 'This page could not be shown. Please try again in a moment.');
      }
    };

  const methodNotAllowed = (allow: string) => {
    const answer = messagePage(405, 'Not here', `This page answers ${allow.replace(/, (?=\w+$)/, ' or ')} only.`);
    answer.headers.set('allow', allow);
    return answer;
  };

  const inbox: Route = async (request) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') return methodNotAllowed('GET, HEAD');
    const session = await sessions.open(request);
    if (!session) return signIn('/inbox');
    const items = await decisions.inbox(callerOf(session));
    return htmlResponse(200, page('Inbox', inboxBody(items, pollMs), viewerOf(session), ['/pages/inbox.js']));
  };

  const inboxFragment: Route = async (request) => {
    if (request.method !== 'GET') return methodNotAllowed('GET');
    const session = await sessions.open(request);
    if (!session) return messagePage(401, 'Signed out', 'Sign in again to see your inbox.');
    return htmlResponse(200, inboxList(await decisions.inbox(callerOf(session))));
  };

  const decide: Route = async (request) => {
    const url = new URL(request.url);
    const id = url.pathname.slice('/decide/'.length);
    const key = url.searchParams.get('key') ?? undefined;
    if (request.method !== 'GET' && request.method !== 'HEAD' && request.method !== 'POST') {
      return methodNotAllowed('GET, HEAD, POST');
    }
    const session = await sessions.open(request);
    if (!session) return signIn(here(request));
    // Request ids and keys are plain tokens: anything else names no decision.
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(id) || (key !== undefined && !/^[A-Za-z0-9_.-]{1,64}$/.test(key))) {
      return messagePage(404, 'No such decision', 'This link names no decision.', viewerOf(session));
    }
    const viewer = viewerOf(session);
    const address = { id, ...(key ? { key } : {}), caller: callerOf(session) };
    if (request.method !== 'POST') {
      const described = await decisions.describe(address);
      if (described.type === 'refused') return refusal(described, session, id);
      return htmlResponse(
        200,
        page('Decide', decideBody(described.view, session.c, undefined, decisions.delegate !== undefined), viewer),
      );
    }
    const form = await checkedForm(request, session);
    if (form instanceof Response) return form;
    if (form.get('_action') === 'delegate' && decisions.delegate) {
      const to = form.get('to');
      const reason = form.get('reason');
      const handed = await decisions.delegate({
        ...address,
        to: typeof to === 'string' ? to.trim() : '',
        ...(typeof reason === 'string' && reason.trim() !== '' ? { reason: reason.trim() } : {}),
      });
      if (handed.type === 'refused') return refusal(handed, session, id);
      return htmlResponse(200, page('Handed over', outcomeBody('Handed over', handed.message, 'recorded'), viewer));
    }
    const action = form.get('_action') === 'decline' ? 'decline' : 'accept';
    if (action === 'decline') {
      const answered = await decisions.answer({ ...address, answer: { action } });
      if (answered.type === 'refused') return refusal(answered, session, id);
      return htmlResponse(200, page('Declined', outcomeBody('Not recorded', answered.message, 'declined'), viewer));
    }
    // The schema says how to read the fields; the engine still checks everything on submit.
    const described = await decisions.describe(address);
    if (described.type === 'refused') return refusal(described, session, id);
    const fields = submittedFields(described.view.requestedSchema, form);
    const answered = await decisions.answer({
      ...address,
      ...(described.view.key ? { key: described.view.key } : {}),
      answer: { action, content: readAnswer(described.view.requestedSchema, fields) },
    });
    if (answered.type === 'refused') return refusal(answered, session, id);
    if (answered.type === 'invalid') {
      const body = decideBody(described.view, session.c, {
        fields,
        problem: answered.message,
        ...(answered.issues ? { issues: answered.issues } : {}),
      });
      return htmlResponse(422, page('Decide', body, viewer));
    }
    const title = answered.type === 'recorded' ? 'Decision recorded' : 'Not recorded';
    return htmlResponse(200, page(title, outcomeBody(title, answered.message, answered.type), viewer));
  };

  const begin: Route = async (request) => {
    if (request.method !== 'GET') return methodNotAllowed('GET');
    return signIn(safeReturnPath(new URL(request.url).searchParams.get('return')));
  };

  const callback: Route = async (request) => {
    if (request.method !== 'GET') return methodNotAllowed('GET');
    const done = await sessions.complete(request);
    if (done.kind === 'expired') {
      return messagePage(
        400,
        'Sign-in expired',
        'This sign-in was not started here or took too long. Open your link again to sign in.',
      );
    }
    if (done.kind === 'failed') {
      return htmlResponse(400, page('Sign-in failed', outcomeBodyError(done.error.message)), [
        ['set-cookie', done.cookie],
      ]);
    }
    return redirect(
      done.returnTo,
      done.cookies.map((cookie): [string, string] => ['set-cookie', cookie]),
    );
  };

  const logout: Route = async (request) => {
    if (request.method !== 'POST') return methodNotAllowed('POST');
    const session = await sessions.open(request);
    if (!session) return redirect('/inbox');
    const form = await checkedForm(request, session);
    if (form instanceof Response) return form;
    return htmlResponse(
      200,
      page('Signed out', outcomeBodyError('You are signed out. Open a decision link or your inbox to sign in again.')),
      [['set-cookie', sessions.clear()]],
    );
  };

  const asset =
    (body: string, type: string): Route =>
    async (request) => {
      if (request.method !== 'GET' && request.method !== 'HEAD') return methodNotAllowed('GET, HEAD');
      return new Response(request.method === 'HEAD' ? null : body, {
        status: 200,
        headers: { ...PAGE_HEADERS, 'content-type': `${type}; charset=utf-8`, 'cache-control': 'max-age=300' },
      });
    };

  const routes: [string, Route][] = [
    ['/inbox', guarded(inbox)],
    ['/inbox/list', guarded(inboxFragment)],
    ['/decide/*', guarded(decide)],
    ['/auth/login', guarded(begin)],
    ['/auth/callback', guarded(callback)],
    ['/auth/logout', guarded(logout)],
    ['/pages/pages.css', asset(PAGES_CSS, 'text/css')],
    ['/pages/inbox.js', asset(INBOX_JS, 'text/javascript')],
  ];
  return new Map(routes.map(([path, route]) => [path, answeringRefusals(route, refusalPage)]));
}

/** A sign-in problem's body. */
function outcomeBodyError(sentence: string) {
  return outcomeBody('Sign-in', sentence, 'declined');
}

/** The paths {@link createDecisionPages} answers (keys of its map). */
export const PAGE_ROUTES: readonly string[] = [
  '/inbox',
  '/inbox/list',
  '/decide/*',
  '/auth/login',
  '/auth/callback',
  '/auth/logout',
  '/pages/pages.css',
  '/pages/inbox.js',
];
