/**
 * Readable JSON-RPC `-32602` for malformed request params on the flow methods.
 * The SDK (2.4.0) validates a spec request's params before any handler runs:
 * for `prompts/get` and `resources/read` a failure is thrown as a plain `Error`
 * whose message is zod's issue list as JSON, so the client gets `-32603`
 * ("internal error") with a JSON dump for what is its own mistake; `tools/call`
 * gets `-32602` with the same dump. This module wraps the stored handlers of
 * those methods once per server and turns such a failure into `-32602`
 * "Invalid params for prompts/get: arguments.version: expected string, received number".
 * Any other error passes through untouched.
 */
import { type McpServer, ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';

type StoredHandler = (request: unknown, ctx: unknown) => Promise<unknown>;

/** Wrappers this module installed, so a second call never wraps twice. */
const installed = new WeakSet<StoredHandler>();

/** At most this many issues, and this many characters, are quoted back to the client. */
const MAX_ISSUES = 5;
const MAX_TEXT = 400;

/**
 * Make params validation failures of `methods` on `server` readable `-32602` errors.
 * Call it after the methods' handlers are registered. When the SDK's internals are not
 * where this expects them, it does nothing (its errors then reach the client as they are).
 *
 * Wire: `{ code: -32602, message: 'Invalid params for resources/read: uri: Invalid input: expected string, received number' }`
 */
export function readableParamsErrors(server: McpServer, methods: readonly string[]): void {
  const handlers = (server.server as unknown as { _requestHandlers?: unknown })._requestHandlers;
  if (!(handlers instanceof Map)) return;
  for (const method of methods) {
    const stored = handlers.get(method) as StoredHandler | undefined;
    if (typeof stored !== 'function' || installed.has(stored)) continue;
    const wrapper: StoredHandler = async (request, ctx) => {
      try {
        return await stored(request, ctx);
      } catch (error) {
        throw readable(method, error);
      }
    };
    installed.add(wrapper);
    handlers.set(method, wrapper);
  }
}

interface Issue {
  readonly path: readonly unknown[];
  readonly message: string;
}

/** `error` as a readable `-32602` when it is a params validation failure; else `error` itself. */
function readable(method: string, error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  if (error instanceof ProtocolError && error.code !== ProtocolErrorCode.InvalidParams) return error;
  const issues = zodIssues(error.message);
  if (!issues) return error;
  const text = issues
    .slice(0, MAX_ISSUES)
    .map(({ path, message }) => {
      const where = path.filter((part) => part !== 'params').join('.');
      return where ? `${where}: ${message}` : message;
    })
    .join('; ');
  const more = issues.length > MAX_ISSUES ? ` (and ${issues.length - MAX_ISSUES} more)` : '';
  const sentence = `Invalid params for ${method}: ${text}${more}`;
  return new ProtocolError(
    ProtocolErrorCode.InvalidParams,
    sentence.length > MAX_TEXT ? `${sentence.slice(0, MAX_TEXT - 1)}…` : sentence,
  );
}

/** The zod issue list a message carries as JSON (after an optional prefix), or `undefined`. */
function zodIssues(message: string): Issue[] | undefined {
  const start = message.indexOf('[');
  if (start < 0) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(message.slice(start));
  } catch {
    return undefined;
  }
  const isIssue = (item: unknown): item is Issue =>
    typeof item === 'object' &&
    item !== null &&
    Array.isArray((item as Issue).path) &&
    typeof (item as Issue).message === 'string';
  return Array.isArray(parsed) && parsed.length > 0 && parsed.every(isIssue) ? parsed : undefined;
}
