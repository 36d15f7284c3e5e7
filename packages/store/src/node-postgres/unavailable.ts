/**
 * Which PostgreSQL failures mean "the ledger cannot be reached right now"
 * rather than "this statement is wrong": the server refusing or dropping
 * connections (restart, shutdown, crash recovery, too many clients), the
 * network failing, or the pool giving up waiting for a connection. Those
 * become the engine's retryable `LedgerUnavailableError`, which clients see
 * as JSON-RPC -32000 `ledger_unavailable`; everything else passes through
 * unchanged. node-postgres reconnects by itself: a pool drops broken
 * connections and opens new ones on the next query, so nothing here restarts.
 */
import { LedgerUnavailableError } from '@baton/engine';
import { describeError } from '../core/errors.js';

/** Socket-level error codes of a server that cannot be reached. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * SQLSTATEs of a server going away or not accepting work yet: admin_shutdown (57P01),
 * crash_shutdown (57P02), cannot_connect_now (57P03, starting up or recovering),
 * too_many_connections (53300); class 08 (connection exceptions) is matched by prefix.
 */
const SERVER_CODES = new Set(['57P01', '57P02', '57P03', '53300']);

/** node-postgres' own messages for a connection lost or never obtained (it sets no code). */
const CLIENT_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
];

/** Whether `error` (or an error it wraps, as drizzle's query errors do) is a connection failure. */
export function isConnectionFailure(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (NETWORK_CODES.has(code) || SERVER_CODES.has(code) || code.startsWith('08'))) {
      return true;
    }
    if (CLIENT_MESSAGES.some((m) => e instanceof Error && e.message.startsWith(m))) return true;
    if (e instanceof AggregateError && e.errors.some(isConnectionFailure)) return true;
  }
  return false;
}

/** `error` as a `LedgerUnavailableError` when it is a connection failure, else unchanged. */
export function toUnavailable(error: unknown, where: string): unknown {
  if (error instanceof LedgerUnavailableError || !isConnectionFailure(error)) return error;
  // drizzle wraps driver errors in one whose message repeats the query and its values: name the driver's.
  let root: unknown = error;
  while (root instanceof Error && root.cause instanceof Error) root = root.cause;
  return new LedgerUnavailableError(`The PostgreSQL ledger at ${where} is unavailable: ${describeError(root)}`, {
    cause: error,
  });
}

/** How long an outcome is retried while the database is unreachable, in ms. */
export const OUTCOME_RETRY_BUDGET_MS = 15_000;

/**
 * Run `attempt`, again after a pause (100 ms, doubling to 1 s) each time it fails with a
 * connection failure, for at most `budgetMs` or until `stopped()`; then its last error. For
 * writes that must not be lost and are safe to repeat (recording an outcome only fills a null).
 */
export async function retryWhileUnavailable<T>(
  attempt: () => Promise<T>,
  budgetMs: number,
  stopped: () => boolean,
): Promise<T> {
  const deadline = Date.now() + budgetMs;
  for (let pause = 100; ; pause = Math.min(1000, pause * 2)) {
    try {
      return await attempt();
    } catch (error) {
      if (!isConnectionFailure(error) || stopped() || Date.now() + pause > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}
