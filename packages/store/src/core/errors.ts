/**
 * Errors raised by the ledgers themselves (never by a redemption outcome: a
 * replay is a normal `replayed` result, which the engine turns into its opaque
 * `InvalidRequestStateError`). `LedgerError` covers misuse and configuration
 * (bad URL, closed ledger); `LedgerSchemaError` a database whose schema this
 * code cannot use (newer than it knows, or a failed migration);
 * `LedgerConnectionError` a database that cannot be reached at start-up.
 * Messages never contain passwords: URLs are redacted first.
 */

/** A ledger was misconfigured or misused (for example used after `close()`). */
export class LedgerError extends Error {
  override readonly name: string = 'LedgerError';
}

/** The database's ledger schema is newer than this code, or migrating it failed. */
export class LedgerSchemaError extends LedgerError {
  override readonly name: string = 'LedgerSchemaError';
}

/** The ledger's database could not be reached when the ledger was opened. */
export class LedgerConnectionError extends LedgerError {
  override readonly name: string = 'LedgerConnectionError';
}

/** The message of an unknown thrown value, for wrapping into a clearer error. */
export function describeError(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) {
    return error.errors.map(describeError).join('; ');
  }
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    const message = error.message || error.name;
    return typeof code === 'string' && !message.includes(code) ? `${code}: ${message}` : message;
  }
  return String(error);
}

/** A URL safe to print: the password (if any) is replaced by `***`. Non-URLs come back unchanged. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return url.replace(/\/\/([^:/@]+):[^@/]*@/, '//$1:***@');
  }
}
