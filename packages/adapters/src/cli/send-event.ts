/**
 * `baton send-event <name> --data JSON --http URL [--id ID] [--secret whsec_… |
 * --token TOKEN]`: send an event to the flows a `baton serve` waits with, from
 * the terminal (`POST /events/<name>`, see `http/events.ts`). `--http` takes the
 * server's URL (its `/mcp` URL works too); `--secret` signs the request with
 * Standard Webhooks (the `webhook-id` is `--id`, or a fresh one), `--token`
 * sends a bearer token (it needs the scope `baton:events`). The server's
 * answer is printed on stdout as JSON (`{ "delivered": N, "id": "…" }`); a
 * refusal is one line on stderr with the server's reason, and a non-zero exit.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Webhook } from 'standardwebhooks';
import { checkWebhookSecret } from '../delivery/outboxDelivery.js';
import { CliError, oneLine, usageError } from './cliError.js';
import { parseFlags } from './parseFlags.js';
import { runHint } from './runAs.js';

/** The command's synopsis, as `--help`, usage errors and the README show it. */
export const USAGE =
  'baton send-event <name> --data JSON --http URL [--id ID] [--secret whsec_... | --secret-file FILE | --token TOKEN]';

/** The flags the command parses; the README documents each. */
export const OPTIONS = {
  data: { type: 'string' },
  http: { type: 'string' },
  id: { type: 'string' },
  secret: { type: 'string' },
  'secret-file': { type: 'string' },
  token: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function help(): string {
  return `usage: ${USAGE}

Send an event to the flows a "baton serve --ledger ... --http ..." waits with (POST /events/<name>).

  --data JSON          the event's data (checked against the event's schema by the server)
  --http URL           the server, e.g. http://127.0.0.1:8080 (its /mcp URL works too)
  --id ID              the event's id: a second send with the same id is delivered once (default: a
                       fresh id)
  --secret whsec_...   sign with Standard Webhooks (the server's --event-secret for this name)
  --secret-file FILE   the same, the secret read from FILE (keeps it out of the process list)
  --token TOKEN        send a bearer token instead (it needs the scope baton:events)

Prints the answer, { "delivered": N, "id": "..." }, on stdout.

${runHint('send-event')}
`;
}

/** The events endpoint for `--http URL` and an event name. */
function endpoint(value: string, name: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw usageError(`--http expects an http: or https: URL, got "${value}"`, USAGE);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw usageError(`--http expects an http: or https: URL, got "${value}"`, USAGE);
  }
  const base = url.pathname.replace(/\/mcp\/?$/, '').replace(/\/$/, '');
  return new URL(`${base}/events/${encodeURIComponent(name)}`, url.origin);
}

/** Run `baton send-event`; resolves with the exit code. */
export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, OPTIONS, USAGE);
  if (values.help) {
    process.stderr.write(help());
    return 0;
  }
  if (positionals.length !== 1) {
    throw usageError(positionals.length === 0 ? 'missing <name>' : 'expected one <name>', USAGE);
  }
  const name = positionals[0]!;
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(name))
    throw usageError(`<name> must be 1-64 characters of [A-Za-z0-9_.-], got "${name}"`);
  if (values.http === undefined) throw usageError('--http URL is required', USAGE);
  if (values.data === undefined) throw usageError('--data JSON is required', USAGE);
  let data: unknown;
  try {
    data = JSON.parse(values.data);
  } catch {
    throw usageError('--data is not JSON (e.g. --data \'{"commit":"a1b2c3","status":"success"}\')');
  }
  const signing = [values.secret, values['secret-file'], values.token].filter((v) => v !== undefined).length;
  if (signing > 1) throw usageError('give one of --secret, --secret-file or --token', USAGE);
  const url = endpoint(values.http, name);
  const id = values.id ?? `evt_${randomUUID()}`;
  const body = JSON.stringify({ id, data });
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  let secret = values.secret;
  if (values['secret-file'] !== undefined) {
    try {
      secret = readFileSync(values['secret-file'], 'utf8').trim();
    } catch (error) {
      throw usageError(
        `--secret-file: cannot read ${values['secret-file']}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
      );
    }
  }
  if (secret !== undefined) {
    try {
      checkWebhookSecret(secret);
    } catch (error) {
      throw usageError(`--secret: ${(error as Error).message}`);
    }
    const at = new Date();
    headers['webhook-id'] = id;
    headers['webhook-timestamp'] = String(Math.floor(at.getTime() / 1000));
    headers['webhook-signature'] = new Webhook(secret).sign(id, at, body);
  }
  if (values.token !== undefined) headers.authorization = `Bearer ${values.token}`;
  let response: Response;
  try {
    response = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(60_000) });
  } catch (error) {
    throw new CliError(`cannot reach ${url.origin}: ${oneLine((error as Error).cause ?? error)}`);
  }
  const text = await response.text();
  if (response.status === 202) {
    process.stdout.write(`${text}\n`);
    return 0;
  }
  let detail = text.slice(0, 300);
  try {
    const problem = JSON.parse(text) as { detail?: unknown };
    if (typeof problem.detail === 'string') detail = problem.detail;
  } catch {}
  throw new CliError(`the server refused the event (HTTP ${response.status}): ${oneLine(detail)}`);
}
