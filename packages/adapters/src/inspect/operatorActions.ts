/**
 * The operator actions of `baton inspect`: `POST /api/instances/:fid/cancel`,
 * `/terminate` and `/retry-step` with a JSON body `{ "reason", "step"? }`.
 * They call the runner's operator tools (`runner.operators`, the same
 * functions `baton runs cancel|terminate|retry-step` call), so every rule
 * (one compare-and-set per write, the refusal sentences, the audit entry
 * `via: 'operator'` with who and why) is the engine's. This module checks
 * what the server must check first, in order: the request is same-origin
 * (its `Origin` is the page's), carries the page's CSRF token
 * (`x-baton-csrf`), the viewer has the `operator` role, and the body is JSON
 * with a reason. Refusals are `application/problem+json`: 403 (forged, or
 * not an operator), 415/400 (body), 409 (the engine refused: the run ended,
 * another write won, no such step; its sentence is the `detail`), 503 (no
 * operator tools: `BATON_KEYS` or the ledger missing).
 */
import { timingSafeEqual } from 'node:crypto';
import type { OperatorTools } from '@baton/engine';
import { problemResponse } from '../http/problem.js';
import type { Viewer } from './signIn.js';

/** The actions, as their paths name them. */
export type InspectAction = 'cancel' | 'terminate' | 'retry-step';

/** The path of an action: `/api/instances/<fid>/<action>`. */
export const ACTION_PATH = /^\/api\/instances\/([^/]+)\/(cancel|terminate|retry-step)$/;

/** The role an operator needs (given to the local operator on loopback). */
export const OPERATOR_ROLE = 'operator';

/** Longest reason kept, in characters. */
const MAX_REASON = 500;

/** What {@link performAction} needs. */
export interface ActionContext {
  readonly operators: Pick<OperatorTools, 'cancel' | 'terminate' | 'retryStep'> | undefined;
  readonly viewer: Viewer;
  /** The origin the page is served at (what a same-origin `fetch` sends as `Origin`). */
  readonly origin: string;
  readonly headers: Readonly<Record<string, string>>;
}

/** Whether two tokens are equal (in constant time). */
export const sameToken = (a: string, b: string): boolean => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/** Perform `action` on run `fid` for the request, or refuse it. */
export async function performAction(
  request: Request,
  fid: string,
  action: InspectAction,
  context: ActionContext,
): Promise<Response> {
  const problem = (status: number, reason: string, title: string, detail: string) => {
    const response = problemResponse({ status, reason, title, detail });
    for (const [name, value] of Object.entries(context.headers)) {
      if (!response.headers.has(name)) response.headers.set(name, value);
    }
    return response;
  };
  const forged = (detail: string) => problem(403, 'forged', 'Not from this page', detail);
  if (request.headers.get('origin') !== context.origin) {
    return forged('This action did not come from the inspect page (its Origin is not this server). Nothing changed.');
  }
  const token = request.headers.get('x-baton-csrf');
  if (token === null || !sameToken(token, context.viewer.csrf)) {
    return forged('This action carries no valid page token: reload the page and try again. Nothing changed.');
  }
  if (!context.viewer.roles.includes(OPERATOR_ROLE)) {
    return problem(
      403,
      'not_operator',
      'Operators only',
      `Cancelling, terminating and retrying runs needs the ${OPERATOR_ROLE} role, which ${context.viewer.name} does not have. Nothing changed.`,
    );
  }
  if (!context.operators) {
    return problem(
      503,
      'unavailable',
      'Actions are off',
      'This inspect server cannot act on runs: start it with --audit on the servers’ database and their BATON_KEYS.',
    );
  }
  if (!(request.headers.get('content-type') ?? '').startsWith('application/json')) {
    return problem(415, 'bad_body', 'Bad request body', 'Send the action as JSON: { "reason": "…" }.');
  }
  let body: { reason?: unknown; step?: unknown };
  try {
    body = (await request.json()) as typeof body;
  } catch {
    return problem(400, 'bad_body', 'Bad request body', 'The body is not JSON.');
  }
  const reason = typeof body?.reason === 'string' ? body.reason.trim() : '';
  if (reason === '' || reason.length > MAX_REASON) {
    return problem(
      400,
      'bad_body',
      'Bad request body',
      `A reason is required (1-${MAX_REASON} characters): it goes into the audit trail.`,
    );
  }
  const step = typeof body.step === 'string' ? body.step.trim() : '';
  if (action === 'retry-step' && !/^[A-Za-z0-9_.:-]{1,100}(#\d{1,6})?$/.test(step)) {
    return problem(400, 'bad_body', 'Bad request body', 'Name the step to retry ("step": "charge" or "charge#0").');
  }
  const operatorRequest = { id: fid, operator: context.viewer.principal, reason };
  const outcome =
    action === 'cancel'
      ? await context.operators.cancel(operatorRequest)
      : action === 'terminate'
        ? await context.operators.terminate(operatorRequest)
        : await context.operators.retryStep({ ...operatorRequest, step });
  if (outcome.type === 'error') return problem(409, 'refused', 'Not done', outcome.message);
  const message =
    outcome.type === 'complete'
      ? outcome.result.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n')
      : `Run ${fid} goes on and asks again.`;
  const structured = outcome.type === 'complete' ? (outcome.result.structuredContent ?? {}) : {};
  return new Response(JSON.stringify({ action, id: fid, message, ...structured }), {
    status: 200,
    headers: { ...context.headers, 'content-type': 'application/json; charset=utf-8' },
  });
}
