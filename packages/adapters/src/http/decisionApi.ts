/**
 * The HTTP decision API on the `baton serve` port, for chat bots and other
 * systems (DESIGN.md section 5b): `GET /api/decisions` (the caller's inbox),
 * `GET /api/decisions/<id>` (one pending decision with its form schema;
 * `?key=` when the caller may make several on the request) and
 * `POST /api/decisions/<id>` with `{ "action": "accept" | "decline",
 * "content": {…} }` and an optional `Idempotency-Key` header. The caller is
 * authenticated as on `/mcp` (same Host/Origin checks, same bearer gate: the
 * server's `authenticatedRoutes`); with OAuth the token needs the scope
 * `baton:decide` (else 403 with the SDK's `insufficient_scope` challenge). It
 * is a thin mapping of the runner's one-shot decision entry
 * (`runner.inbox`, `describeDecision`, `answerDecision`, audited as
 * `decide_api`): JSON in and out, times in ISO 8601, every error as problem
 * details (`problem.ts`) with a `reason` code, a schema error as 422 naming
 * the fields, and nothing a client sends ending in a 500.
 */
import {
  type AnswerDecisionResult,
  type DecisionRefusal,
  type DecisionRefusalReason,
  type DecisionView,
  type InboxItem,
  InvalidParamsError,
  LEDGER_RETRY_AFTER_MS,
  LedgerUnavailableError,
  type Runner,
} from '@baton/engine';
import { type AuthInfo, bearerAuthChallengeResponse, OAuthError, OAuthErrorCode } from '@modelcontextprotocol/server';
import { BATON_SCOPES } from '../auth/oauthClaims.js';
import {
  ANONYMOUS_PRINCIPAL,
  displayNameOfAuthInfo,
  principalOfAuthInfo,
  rolesOfAuthInfo,
} from '../mcp/callContext.js';
import { inboxEntry, quorumEntry } from '../mcp/decisionTools.js';
import { fromRefusal, problemResponse } from './problem.js';
import type { AuthenticatedRoute, RouteAdmission } from './serve.js';

/** Where the API answers. */
export const DECISIONS_API_PATH = '/api/decisions';

/** Options of {@link createDecisionApi}. */
export interface DecisionApiOptions {
  /** The runner, once the server is ready (`baton serve` binds the port before it loads flows). */
  readonly runner: () => Promise<Runner>;
  /** Require the OAuth scope `baton:decide` (with `--oauth-issuer`; bearer tokens of `--auth-tokens` carry no scopes). */
  readonly requireScope?: boolean;
  /** Unexpected errors (a 500 was answered), for the server log. */
  readonly onError?: (error: Error) => void;
}

/** A bodiless JSON answer. */
const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
  });

const iso = (ms: number) => new Date(ms).toISOString();

/** The HTTP status and title of each refusal reason. */
const REFUSALS: Record<DecisionRefusalReason, { readonly status: number; readonly title: string }> = {
  not_allowed: { status: 403, title: 'You may not make this decision' },
  unknown: { status: 404, title: 'No such decision' },
  already_decided: { status: 409, title: 'Already decided' },
  lost_race: { status: 409, title: 'Decided by someone else first' },
  already_voted: { status: 409, title: 'You have already voted on this decision' },
  ambiguous_key: { status: 409, title: 'Several decisions: say which with ?key=' },
  in_progress: { status: 409, title: 'An answer under this Idempotency-Key is in progress' },
  expired: { status: 410, title: 'Expired' },
  withdrawn: { status: 410, title: 'Withdrawn' },
  ended: { status: 410, title: 'The request has ended' },
  key_reused: { status: 422, title: 'Idempotency-Key already used for another answer' },
  unavailable: { status: 503, title: 'This server cannot serve the request' },
};

/** A refusal of the engine as problem details. */
function refusalProblem(refusal: DecisionRefusal): Response {
  const { status, title } = REFUSALS[refusal.reason];
  return problemResponse({
    status,
    reason: refusal.reason,
    title,
    detail: refusal.message,
    extra: {
      ...(refusal.decidedBy ? { decidedBy: decided(refusal.decidedBy) } : {}),
      ...(refusal.keys ? { keys: refusal.keys } : {}),
    },
    ...(refusal.retryAfterMs !== undefined
      ? { headers: { 'retry-after': String(Math.max(1, Math.ceil(refusal.retryAfterMs / 1000))) } }
      : {}),
  });
}

const decided = (by: NonNullable<DecisionRefusal['decidedBy']>) => ({
  key: by.key,
  decider: by.decider,
  you: by.you,
  ...(by.decidedAt === undefined ? {} : { decidedAt: iso(by.decidedAt) }),
  ...(by.onBehalfOf === undefined ? {} : { onBehalfOf: by.onBehalfOf }),
});

/** The path of one decision, as the inbox links it. */
const decisionPath = (id: string, key?: string) =>
  `${DECISIONS_API_PATH}/${id}${key === undefined ? '' : `?key=${encodeURIComponent(key)}`}`;

/** An inbox entry on the wire: `baton_inbox`'s, with the decision's path. */
const apiInboxEntry = (item: InboxItem) => ({ ...inboxEntry(item), href: decisionPath(item.id, item.key) });

/** One decision on the wire: ISO times. */
function decisionEntry(view: DecisionView) {
  return {
    id: view.id,
    key: view.key,
    flow: view.flow,
    message: view.message,
    ...(view.role === undefined ? {} : { role: view.role }),
    requestedAt: iso(view.requestedAt),
    ...(view.deadline === undefined ? {} : { deadline: iso(view.deadline) }),
    requester: view.requester,
    ...('arguments' in view ? { arguments: view.arguments } : {}),
    requestedSchema: view.requestedSchema,
    decided: view.decided.map(decided),
    ...(view.quorum === undefined ? {} : { quorum: quorumEntry(view.quorum) }),
    ...(view.delegated === undefined ? {} : { delegated: { ...view.delegated } }),
    ...(view.handover === undefined ? {} : { handover: { ...view.handover, at: iso(view.handover.at) } }),
  };
}

/** What the caller's POST made of the decision, on the wire. */
function answerResponse(result: AnswerDecisionResult): Response {
  switch (result.status) {
    case 'recorded':
    case 'declined':
      return json(200, result);
    case 'invalid':
      return problemResponse({
        status: 422,
        reason: 'invalid_answer',
        title: 'The answer does not match the decision form',
        detail: result.message,
        extra: {
          id: result.id,
          key: result.key,
          errors: result.issues.map((issue) => ({ field: issue.field, hint: issue.hint })),
        },
      });
    default:
      return refusalProblem(result);
  }
}

/** A 400 for a request the API cannot read. */
const badRequest = (reason: string, detail: string) =>
  problemResponse({ status: 400, reason, title: 'Bad request', detail });

/** What `Idempotency-Key` may be: printable ASCII, 1 to 255 characters. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** The POST body: `{ action, content? }`, or why not. */
function readAnswer(text: string): { action: 'accept' | 'decline'; content?: unknown } | Response {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return badRequest('bad_json', 'The body is not JSON: send {"action": "accept", "content": {…}}.');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return badRequest('bad_body', 'The body must be a JSON object: {"action": "accept" | "decline", "content": {…}}.');
  }
  const { action, content } = body as { action?: unknown; content?: unknown };
  if (action !== 'accept' && action !== 'decline') {
    return problemResponse({
      status: 422,
      reason: 'invalid_answer',
      title: 'The answer does not match the decision form',
      detail: '"action" must be "accept" or "decline".',
      extra: { errors: [{ field: 'action', hint: 'must be "accept" or "decline"' }] },
    });
  }
  if (content !== undefined && (typeof content !== 'object' || content === null || Array.isArray(content))) {
    return problemResponse({
      status: 422,
      reason: 'invalid_answer',
      title: 'The answer does not match the decision form',
      detail: '"content" must be an object with the form\'s fields.',
      extra: { errors: [{ field: 'content', hint: 'must be an object' }] },
    });
  }
  return content === undefined ? { action } : { action, content };
}

/**
 * `POST /api/decisions/<id>/delegate`: `{ "to": "<principal>", "reason"?: "…" }` hands the pending
 * decision to `to` (`runner.delegateDecision`): 200 `{ status: 'handed', … }`, 400 for a bad body,
 * refusals as problem details.
 */
async function delegateResponse(
  runner: Runner,
  which: { id: string; key?: string; context: { principal: string; roles: readonly string[] } },
  text: string,
): Promise<Response> {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return badRequest('bad_json', 'The body is not JSON: send {"to": "<principal>", "reason": "…"}.');
  }
  const { to, reason } = (typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {}) as {
    to?: unknown;
    reason?: unknown;
  };
  if (typeof to !== 'string' || (reason !== undefined && typeof reason !== 'string')) {
    return badRequest('bad_body', 'The body must be {"to": "<principal>", "reason"?: "…"} (strings).');
  }
  const out = await runner.delegateDecision({ ...which, to, ...(reason === undefined ? {} : { reason }) });
  if (out.status !== 'handed') return refusalProblem(out);
  return json(200, out);
}

/** The 403 of a token without `baton:decide`, with the SDK's `insufficient_scope` challenge. */
function insufficientScope(authInfo: AuthInfo): Response {
  const challenge = bearerAuthChallengeResponse(
    new OAuthError(OAuthErrorCode.InsufficientScope, `This needs the scope ${BATON_SCOPES.decide}`),
    {
      requiredScopes: [BATON_SCOPES.decide],
      ...(authInfo.resourceMetadataUrl ? { resourceMetadataUrl: authInfo.resourceMetadataUrl } : {}),
    },
  );
  return problemResponse({
    status: 403,
    reason: 'insufficient_scope',
    title: 'Insufficient scope',
    detail: `The access token lacks the scope ${BATON_SCOPES.decide}, which deciding needs.`,
    headers: { 'www-authenticate': challenge.headers.get('www-authenticate') ?? 'Bearer error="insufficient_scope"' },
  });
}

/**
 * The API as an authenticated route of `serveHttp` (`authenticatedRoutes`), keyed by its prefix.
 *
 * Wire (times ISO 8601; errors `application/problem+json` with `type`, `title`, `status`, `detail`, `reason`):
 * - `GET /api/decisions` -> 200 `{ "decisions": [{ "id", "key", "flow", "message", "requestedAt", "deadline"?, "href" }] }`
 * - `GET /api/decisions/<id>[?key=K]` -> 200 `{ "id", "key", "flow", "message", "role"?, "requestedAt",
 *   "deadline"?, "requester", "arguments"?, "requestedSchema", "decided": [{ "key", "decider", "you", "decidedAt" }] }`
 * - `POST /api/decisions/<id>[?key=K]` `{ "action": "accept", "content": { "approve": true } }` -> 200
 *   `{ "status": "recorded", "id", "key", "flow", "message", "next" }` (or `"declined"`); 422 `invalid_answer`
 *   with `errors: [{ "field", "hint" }]`; 403 `not_allowed` | `insufficient_scope`; 404 `unknown`; 409
 *   `already_decided` | `lost_race` (with `decidedBy`) | `ambiguous_key` (with `keys`) | `in_progress`; 410
 *   `expired` | `withdrawn` | `ended`; 422 `key_reused`.
 * - `POST /api/decisions/<id>/delegate[?key=K]` `{ "to": "dave", "reason"?: "on leave" }` -> 200
 *   `{ "status": "handed", "id", "key", "flow", "to", "message" }`; 400 `bad_body`; refusals as above
 *   (see {@link delegateResponse}).
 */
export function createDecisionApi(options: DecisionApiOptions): ReadonlyMap<string, AuthenticatedRoute> {
  const route: AuthenticatedRoute = async (request, admission) => {
    if (admission.status === 'refused') return fromRefusal(admission.response);
    try {
      return await answer(options, request, admission);
    } catch (error) {
      if (error instanceof InvalidParamsError) return badRequest('bad_body', error.message);
      if (error instanceof LedgerUnavailableError) {
        return problemResponse({
          status: 503,
          reason: 'ledger_unavailable',
          title: 'Service unavailable',
          detail: 'The ledger does not answer: try again in a moment.',
          headers: { 'retry-after': String(Math.ceil(LEDGER_RETRY_AFTER_MS / 1000)) },
        });
      }
      options.onError?.(error as Error);
      return problemResponse({ status: 500, reason: 'internal', title: 'Internal error', detail: 'Internal error.' });
    }
  };
  return new Map([[DECISIONS_API_PATH, route]]);
}

async function answer(
  options: DecisionApiOptions,
  request: Request,
  admission: Extract<RouteAdmission, { status: 'admitted' }>,
): Promise<Response> {
  const url = new URL(request.url);
  const rest = url.pathname.slice(DECISIONS_API_PATH.length);
  const parts = rest === '' || rest === '/' ? undefined : /^\/([^/]+)(\/delegate)?$/.exec(rest);
  const id = parts?.[1];
  const delegating = parts?.[2] !== undefined;
  if (rest !== '' && rest !== '/' && id === undefined) {
    return problemResponse({
      status: 404,
      reason: 'unknown',
      title: 'Not found',
      detail: 'There is no such resource.',
    });
  }
  const allow = id === undefined ? 'GET' : delegating ? 'POST' : 'GET, POST';
  if (!allow.split(', ').includes(request.method)) {
    return problemResponse({
      status: 405,
      reason: 'method_not_allowed',
      title: 'Method not allowed',
      detail: `${request.method} is not allowed here: use ${allow}.`,
      headers: { allow },
    });
  }
  const { authInfo } = admission;
  if (options.requireScope && authInfo && !authInfo.scopes.includes(BATON_SCOPES.decide)) {
    return insufficientScope(authInfo);
  }
  const displayName = displayNameOfAuthInfo(authInfo);
  const context = authInfo
    ? {
        principal: principalOfAuthInfo(authInfo),
        roles: rolesOfAuthInfo(authInfo),
        ...(displayName ? { displayName } : {}),
      }
    : { principal: ANONYMOUS_PRINCIPAL, roles: [] };
  const runner = await options.runner();
  if (id === undefined) {
    const items = await runner.inbox(context);
    return json(200, { decisions: items.map(apiInboxEntry) });
  }
  const key = url.searchParams.get('key') ?? undefined;
  const which = { id, context, ...(key === undefined ? {} : { key }) };
  if (request.method === 'GET') {
    const described = await runner.describeDecision(which);
    return described.status === 'pending' ? json(200, decisionEntry(described.decision)) : refusalProblem(described);
  }
  const type = request.headers.get('content-type') ?? '';
  if (!/^application\/([a-z.+-]*\+)?json\s*(;|$)/i.test(type)) {
    return problemResponse({
      status: 415,
      reason: 'unsupported_media_type',
      title: 'Unsupported media type',
      detail: 'Send the answer as application/json.',
      headers: { accept: 'application/json' },
    });
  }
  if (delegating) return delegateResponse(runner, which, await request.text());
  const idempotencyKey = request.headers.get('idempotency-key') ?? undefined;
  if (idempotencyKey !== undefined && !IDEMPOTENCY_KEY.test(idempotencyKey)) {
    return badRequest('bad_idempotency_key', 'An Idempotency-Key is 1 to 255 printable ASCII characters.');
  }
  const body = readAnswer(await request.text());
  if (body instanceof Response) return body;
  const result = await runner.answerDecision({
    ...which,
    answer: body,
    channel: 'api',
    ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
  });
  return answerResponse(result);
}
