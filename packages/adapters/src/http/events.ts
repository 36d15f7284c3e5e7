/**
 * `POST /events/<name>` on `baton serve`: another system (CI, a payment
 * provider) sends an event to the flows waiting for it. Authentication is
 * either a Standard Webhooks signature (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature`) checked with the `standardwebhooks` package against
 * the secrets configured for that event name (or for `*`), within its
 * timestamp tolerance (5 minutes), or a bearer token whose verified identity
 * holds the scope `baton:events`. The body is JSON `{ "data": {…}, "id"?: "…" }`
 * (a Standard Webhooks body `{ type, timestamp, data }` reads the same); the
 * event id is the `webhook-id` when signed, else the body's `id`. The answer
 * is `202 { "delivered": N, "id": "…" }` (a retried id: the first count, and
 * `"duplicate": true`); every refusal is `application/problem+json` (RFC
 * 9457): 400 not JSON (the signature is verified over the exact bytes first,
 * without the library's own parse: a sender with the right secret is never
 * told its signature is wrong), 401 unsigned, badly signed or too old (in the
 * same words whether the name has a secret or none), 403 a bearer without the
 * scope, 404 an event no served flow waits for, 405 not POST, 413 over the
 * body limit and 403 a foreign Host or Origin (the server's own checks, as
 * problem details: `refused`), 422 a body its schema refuses
 * (`errors[].pointer` names the field), 503 the ledger or the token issuer
 * unreachable. The 401 and 403 challenges name the resource metadata with
 * OAuth. Nothing a sender controls ends in a 500.
 */
import { randomBytes } from 'node:crypto';
import { LedgerUnavailableError, type Runner } from '@baton/engine';
import type { AuthInfo, OAuthTokenVerifier } from '@modelcontextprotocol/server';
import { Webhook } from 'standardwebhooks';
import { IssuerUnavailableError } from '../auth/introspection.js';
import { BATON_SCOPES } from '../auth/oauthClaims.js';
import { principalOfAuthInfo } from '../mcp/callContext.js';
import { problemRefusals } from './routeRefusals.js';
import type { ServedRoute } from './serve.js';

/** The path prefix of the endpoint: `POST /events/<name>`. */
export const EVENTS_PATH = '/events/';

/** The secrets key that signs every event name (`--event-secret '*=whsec_…'`). */
export const ANY_EVENT = '*';

/** Options of {@link createEventsRoute}. */
export interface EventsRouteOptions {
  /** The runner whose flows receive events (a promise: a server binds its port before loading flows). */
  readonly runner: () => Promise<Pick<Runner, 'sendEvent' | 'awaitsEvents' | 'hasLedger'>>;
  /** Standard Webhooks secrets (`whsec_…`) by event name, or {@link ANY_EVENT}; several during a rotation. */
  readonly secrets?: ReadonlyMap<string, readonly string[]>;
  /** Verifies bearer tokens (static tokens or OAuth); without it only signed events are accepted. */
  readonly verifier?: OAuthTokenVerifier;
  /**
   * The Protected Resource Metadata URL (with OAuth, as `/mcp`'s challenges name it): the 401 and
   * 403 challenges carry it as `resource_metadata`. Asked per answer (known once the port is bound).
   */
  readonly resourceMetadataUrl?: () => string | undefined;
  /** Failures that are not the sender's (reporting only; never a secret). */
  readonly onError?: (error: Error) => void;
  /**
   * An event was routed (`delivered`: the waiting instances it reached) or answered as a duplicate
   * of one seen before (nothing delivered again): `baton serve` counts them for `/metrics`.
   */
  readonly onSent?: (sent: { readonly delivered: number; readonly duplicate: boolean }) => void;
}

const PHRASES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  422: 'Unprocessable Content',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/** An RFC 9457 problem answer (`application/problem+json`). */
function problem(
  status: number,
  detail: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Response {
  return new Response(
    JSON.stringify({ type: 'about:blank', title: PHRASES[status] ?? 'Error', status, detail, ...extra }),
    {
      status,
      headers: { 'content-type': 'application/problem+json', ...headers },
    },
  );
}

/** A JSON Pointer (RFC 6901) into the body for a problem's field path (`data.commit` -> `#/data/commit`). */
function pointerOf(problemText: string): string {
  const field = problemText.split(':')[0]!.trim();
  const parts = field.split('.').map((p) => p.replace(/\[(\d+)\]/g, '/$1'));
  return `#/${parts.map((p) => p.replace(/~/g, '~0')).join('/')}`;
}

const NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** Who sent an event, for the audit trail (hashed there), or the refusal. */
type Sender = { readonly sender: string; readonly id?: string } | Response;

/**
 * The body as text when it is UTF-8 (a byte order mark kept), else `undefined`. Kept exactly, so
 * that the library's HMAC over this text is the HMAC over the bytes received: a lossy decoding
 * (U+FFFD for a bad byte, a dropped BOM) would fail a signature its sender made correctly.
 */
function utf8Text(bytes: Uint8Array): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/** The refusal of every signature that no secret held for the name verifies: one sentence whether it has secrets or none. */
const BAD_SIGNATURE =
  'The webhook-signature does not match the body under any secret this server accepts for this event.';

/**
 * A secret no sender holds, verified against when a name has none: a name without a secret then
 * answers as one with a secret would, in words and in time (the timestamp is checked too), so
 * names cannot be probed.
 */
const NO_SECRET = [`whsec_${randomBytes(32).toString('base64')}`];

/**
 * The Standard Webhooks check of a signed request, over the body's exact text: the library verifies
 * the headers, the timestamp and the signature, and is told not to parse (a body that is not JSON is
 * the caller's 400, after the signature: a sender with the right secret is never told it is wrong).
 */
function verifySignature(
  options: EventsRouteOptions,
  name: string,
  request: Request,
  body: string,
): { readonly sender: string; readonly id: string } | Response {
  const configured = options.secrets?.get(name) ?? options.secrets?.get(ANY_EVENT) ?? [];
  const headers = {
    'webhook-id': request.headers.get('webhook-id') ?? '',
    'webhook-timestamp': request.headers.get('webhook-timestamp') ?? '',
    'webhook-signature': request.headers.get('webhook-signature') ?? '',
  };
  let reason = BAD_SIGNATURE;
  for (const secret of configured.length > 0 ? configured : NO_SECRET) {
    try {
      new Webhook(secret).verify(body, headers, { jsonParse: false });
      if (configured.length === 0) break;
      return { sender: `event-source:${options.secrets?.has(name) ? name : ANY_EVENT}`, id: headers['webhook-id'] };
    } catch (error) {
      const message = (error as Error).message ?? '';
      if (/timestamp/i.test(message))
        reason = 'The webhook-timestamp is too old or too far ahead (tolerance: 5 minutes).';
      else if (/header/i.test(message))
        reason = 'The webhook-id, webhook-timestamp and webhook-signature headers are all required.';
    }
  }
  return problem(401, reason);
}

async function authenticate(
  options: EventsRouteOptions,
  name: string,
  request: Request,
  body: string,
): Promise<Sender> {
  if (request.headers.get('webhook-signature') !== null) return verifySignature(options, name, request, body);
  const metadata = options.resourceMetadataUrl?.();
  /** A bearer challenge, with `resource_metadata` when OAuth is configured (as `/mcp`'s). */
  const challenge = (fields: string) =>
    `Bearer ${fields}${metadata === undefined ? '' : `, resource_metadata="${metadata}"`}`;
  const authorization = request.headers.get('authorization');
  const token = authorization?.match(/^Bearer\s+(\S+)\s*$/i)?.[1];
  if (!token || !options.verifier) {
    return problem(
      401,
      'Sign the event (Standard Webhooks) or send a bearer token with the scope baton:events.',
      {},
      { 'www-authenticate': challenge(`scope="${BATON_SCOPES.events}"`) },
    );
  }
  let auth: AuthInfo;
  try {
    auth = await options.verifier.verifyAccessToken(token);
  } catch (error) {
    if (error instanceof IssuerUnavailableError) {
      return problem(503, 'The token cannot be checked now: try again later.', {}, { 'retry-after': '10' });
    }
    return problem(
      401,
      'The bearer token is not valid.',
      {},
      { 'www-authenticate': challenge(`error="invalid_token", scope="${BATON_SCOPES.events}"`) },
    );
  }
  if (!auth.scopes.includes(BATON_SCOPES.events)) {
    return problem(
      403,
      `The bearer token lacks the scope ${BATON_SCOPES.events}.`,
      {},
      { 'www-authenticate': challenge(`error="insufficient_scope", scope="${BATON_SCOPES.events}"`) },
    );
  }
  return { sender: principalOfAuthInfo(auth) };
}

/**
 * The handler of `POST /events/<name>` (see the module comment), for `serveHttp`'s body routes.
 *
 * @example
 * ```ts
 * import { createEventsRoute, createFlowServerFactory, EVENTS_PATH, serveHttp } from '@baton/adapters';
 *
 * const route = createEventsRoute({ runner: async () => runner, secrets: new Map([['ci.finished', [process.env.CI_SECRET!]]]) });
 * const factory = createFlowServerFactory({ runner });
 * await serveHttp({ factory, host: '127.0.0.1', port: 8080, routes: new Map([[`${EVENTS_PATH}*`, route]]) });
 * ```
 */
export function createEventsRoute(options: EventsRouteOptions): ServedRoute {
  return problemRefusals(async (request) => {
    try {
      return await answer(options, request);
    } catch (error) {
      if (error instanceof LedgerUnavailableError) {
        return problem(503, 'The ledger cannot be reached: try again later.', {}, { 'retry-after': '5' });
      }
      options.onError?.(error as Error);
      return problem(500, 'The event could not be delivered; the server log has details.');
    }
  });
}

async function answer(options: EventsRouteOptions, request: Request): Promise<Response> {
  if (request.method !== 'POST') return problem(405, 'Send events with POST.', {}, { allow: 'POST' });
  const raw = new URL(request.url).pathname.slice(EVENTS_PATH.length);
  let name: string;
  try {
    name = decodeURIComponent(raw);
  } catch {
    name = '';
  }
  const runner = await options.runner();
  if (!NAME.test(name) || !runner.awaitsEvents)
    return problem(404, `No served flow waits for the event "${NAME.test(name) ? name : '…'}".`);
  if (!runner.hasLedger) return problem(404, 'Events need a ledger: this server has none (baton serve --ledger URL).');
  // The exact bytes: the signature is over them. Not UTF-8, they are no JSON and the library could
  // not check a signature over them (it signs text): 400, whoever sent them.
  const body = utf8Text(new Uint8Array(await request.arrayBuffer()));
  if (body === undefined) return problem(400, 'The body is not UTF-8 JSON: send { "data": { … } }.');
  const sender = await authenticate(options, name, request, body);
  if (sender instanceof Response) return sender;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return problem(400, 'The body is not JSON: send { "data": { … } }.');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed) || !Object.hasOwn(parsed, 'data')) {
    return problem(422, 'data: required (send { "data": { … } })', {
      errors: [{ pointer: '#/data', detail: 'required' }],
    });
  }
  const fields = parsed as { data?: unknown; id?: unknown };
  const bodyId = fields.id;
  if (sender.id === undefined && bodyId !== undefined && typeof bodyId !== 'string') {
    return problem(422, 'id: must be a string', { errors: [{ pointer: '#/id', detail: 'must be a string' }] });
  }
  const id = sender.id ?? (bodyId as string | undefined);
  const sent = await runner.sendEvent(name, {
    data: fields.data,
    sender: sender.sender,
    ...(id === undefined ? {} : { id }),
  });
  if (sent.status === 'unknown') return problem(404, sent.problem);
  if (sent.status === 'invalid') {
    const errors = sent.problem.split('; ').map((part) => ({
      pointer: pointerOf(part),
      detail: part.slice(part.indexOf(':') + 1).trim(),
    }));
    return problem(422, sent.problem, { errors });
  }
  options.onSent?.({ delivered: sent.delivered, duplicate: sent.duplicate });
  return Response.json(
    { delivered: sent.delivered, id: sent.id, ...(sent.duplicate ? { duplicate: true } : {}) },
    { status: 202 },
  );
}
