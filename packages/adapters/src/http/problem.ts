/**
 * Problem details (RFC 9457) for Baton's JSON APIs: every error answers
 * `application/problem+json` with `type` (`urn:baton:problem:<reason>`),
 * `title`, `status`, `detail` and Baton's `reason` code, plus members of its
 * own (`errors`, `decidedBy`, …). `fromRefusal` turns an answer of the server's
 * checks in the shape `/mcp` gives them (JSON-RPC or OAuth error JSON: a 403
 * Host/Origin refusal, a 401 bearer challenge, a 503 issuer outage, a 413) into
 * one, keeping its status and the headers a client acts on (`WWW-Authenticate`,
 * `Retry-After`).
 */

/** The media type of problem details. */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** One problem: the RFC 9457 members and Baton's `reason`, plus any extension members. */
export interface Problem {
  readonly status: number;
  /** Baton's reason code (also the last part of `type`), e.g. `not_allowed`. */
  readonly reason: string;
  /** A short summary of the kind of problem, the same for every occurrence of `reason`. */
  readonly title: string;
  /** This occurrence, in a sentence for a person. */
  readonly detail: string;
  /** Extension members (RFC 9457 section 3.2). */
  readonly extra?: Readonly<Record<string, unknown>>;
  /** Headers to send with it (e.g. `retry-after`). */
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * The problem as a response.
 *
 * @example
 * ```ts
 * import { problemResponse } from '@baton/adapters';
 *
 * const response = problemResponse({ status: 404, reason: 'unknown', title: 'Not found', detail: 'There is no request R7x.' });
 * // 404 application/problem+json:
 * // {"type":"urn:baton:problem:unknown","title":"Not found","status":404,"detail":"There is no request R7x.","reason":"unknown"}
 * ```
 */
export function problemResponse(problem: Problem): Response {
  const body = {
    type: `urn:baton:problem:${problem.reason}`,
    title: problem.title,
    status: problem.status,
    detail: problem.detail,
    reason: problem.reason,
    ...problem.extra,
  };
  return new Response(JSON.stringify(body), {
    status: problem.status,
    headers: { 'content-type': PROBLEM_CONTENT_TYPE, 'cache-control': 'no-store', ...problem.headers },
  });
}

const TITLES: Record<number, { reason: string; title: string }> = {
  401: { reason: 'unauthorized', title: 'Authentication required' },
  403: { reason: 'forbidden', title: 'Forbidden' },
  413: { reason: 'too_large', title: 'Request body too large' },
  503: { reason: 'unavailable', title: 'Service unavailable' },
};

/** The headers of a refusal that a client acts on. */
const KEPT_HEADERS = ['www-authenticate', 'retry-after'];

/**
 * A refusal of the server's checks, in the shape `/mcp` gives it, as problem details with the same
 * status and challenge headers. Its message (`error.message` of JSON-RPC, `error_description` of
 * OAuth) becomes `detail`.
 */
export async function fromRefusal(response: Response): Promise<Response> {
  const known = TITLES[response.status] ?? { reason: 'refused', title: 'Refused' };
  let detail = known.title;
  try {
    const body = (await response.json()) as { error?: unknown; error_description?: unknown };
    const error = body.error as { message?: unknown } | string | undefined;
    const said =
      typeof body.error_description === 'string'
        ? body.error_description
        : typeof error === 'object' && typeof error?.message === 'string'
          ? error.message
          : undefined;
    if (said) detail = said;
  } catch {
    // Not JSON: the title says it.
  }
  const headers: Record<string, string> = {};
  for (const name of KEPT_HEADERS) {
    const value = response.headers.get(name);
    if (value !== null) headers[name] = value;
  }
  return problemResponse({ status: response.status, reason: known.reason, title: known.title, detail, headers });
}
