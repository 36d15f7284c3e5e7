/**
 * `baton serve <flows-module> (--http HOST:PORT | --stdio) [--ledger URL]
 * [--ttl SECONDS] [--max-ttl SECONDS] [--auth-tokens FILE | --oauth-issuer URL
 * ...(see oauthServe.ts)] [--roles a,b]
 * [--wait-in-call SECONDS] [--task-poll SECONDS] [--notify-webhook URL] [--notify-principals
 * hash|id] [--store-principal-names] [--audit] [--inspect MODULE]
 * [--allow-replays] [--round-budget MS]`: the DESIGN.md section 5 contract.
 * Keys come from `BATON_KEYS` (comma-separated base64url secrets of at least
 * 32 random bytes; the first mints, all verify; `baton keygen` prints one),
 * or a random per-process key with a warning (refused on a ledger that holds
 * requests sealed under other key ids: `foreignLedger.ts`). With `--ledger` every flow is
 * one-time; without one, flows declared `needsLedger` are left out, one
 * warning line each. Over HTTP (stateless Streamable HTTP at `/mcp`) the
 * principal is the bearer token's principal from `--auth-tokens` (unknown or
 * missing token: 401), with the roles the file gives it, or, with
 * `--oauth-issuer`, `<iss>#<sub>` of an access token from the identity provider
 * with the roles of its claims (the issuer is discovered before the port is
 * bound), or `anonymous`; over
 * stdio it is the local user, with the roles of `--roles`. With a ledger and
 * flows that await decisions, the decision tools are served too; a round waits
 * for decisions (and for durable steps that outlive `--round-budget`) up to
 * `--wait-in-call` seconds per call, and
 * `--notify-webhook` POSTs each notification (with a ledger: `decision.requested`,
 * `decision.made`, `request.ended`, `flow.notification`). Over HTTP,
 * `GET /healthz` and `GET /metrics` answer too (`observability.ts`), and with
 * `--login-client-id` the decision pages `/inbox` and `/decide/<id>` (`pagesServe.ts`).
 *
 * Start-up checks everything that needs no flows first (flags, keys, the
 * ledger URL, the tokens file, then binds the port), then loads the flows and
 * opens the ledger (a taken port leaves no database behind); its warnings are
 * printed only once it has succeeded, so on any failure the one line saying
 * what is wrong is all it prints: it closes what it had opened, removes its
 * signal listeners and exits non-zero. The listening URL (or "on stdio") is printed
 * on stderr once ready; SIGINT and SIGTERM close the server, the inspector (when
 * it has `stop()`), the audit log and the ledger. Over stdio, stdout belongs to
 * the transport: once serving starts, what anything else prints there
 * (`console.log`, an inspector module such as Stately's Sky inspector) goes to
 * stderr.
 */

import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  type AuditLog,
  createKeyRing,
  createRequestStateCodec,
  createRunner,
  createScheduler,
  DEFAULT_MAX_TTL_SECONDS,
  type Flow,
  generateKey,
  type Inspector,
  type KeyRing,
  type Ledger,
  needsLedgerOnlyForSteps,
  parseKeyRingEnv,
  type Runner,
  type RunnerLogEvent,
  UnknownKeyError,
} from '@baton/engine';
import { openAuditLog, openLedger, parseLedgerUrl } from '@baton/store';
import type { McpServerFactory, OAuthTokenVerifier } from '@modelcontextprotocol/server';
import { StdioServerTransport, serveStdio } from '@modelcontextprotocol/server/stdio';
import { createStaticTokenVerifier, loadAuthTokens } from '../authTokens.js';
import { defaultRoles } from '../callContext.js';
import { createDecisionApi } from '../decisionApi.js';
import { decisionPageUrl, parsePublicUrl } from '../decisionLinks.js';
import { ANY_EVENT, createEventsRoute, EVENTS_PATH } from '../events.js';
import { loadFlowsModule } from '../flowsModule.js';
import { serveHttp, servingWarning } from '../http.js';
import { ServingMetrics } from '../metrics.js';
import { createObservabilityRoutes, type LedgerSource } from '../observability.js';
import { checkWebhookSecret, createOutboxDeliverer } from '../outboxDelivery.js';
import { decideElsewhereRoutes, startupWarning } from '../pages/decideElsewhere.js';
import { resourceMetadataUrl } from '../protectedResource.js';
import { createFlowServerFactory } from '../serverFactory.js';
import { createTaskListen } from '../subscriptions/taskListen.js';
import { createWebhookNotifier } from '../webhook.js';
import { CliError, oneLine, usageError } from './cliError.js';
import { refuseForeignLedger } from './foreignLedger.js';
import { OAUTH_OPTIONS, type OAuthServeFlags, parseOAuthFlags, prepareOAuth } from './oauthServe.js';
import { PAGES_OPTIONS, type PagesServeFlags, parsePagesFlags, pendingPages } from './pagesServe.js';
import { parseFlags } from './parseFlags.js';
import { runHint } from './runAs.js';

/** The command's synopsis, as `--help`, usage errors and the README show it. */
export const USAGE =
  'baton serve <flows-module> (--http HOST:PORT | --stdio) [--ledger sqlite:PATH|postgres://...|memory:] [--ttl SECONDS] [--max-ttl SECONDS] [--auth-tokens FILE | --oauth-issuer URL [--oauth-audience URL] [--roles-claim PATH] [--principal-claim NAME] [--group-roles FILE] [--introspection-client FILE] [--login-client-id ID --login-client-secret-file FILE]] [--roles ROLE,...] [--wait-in-call SECONDS] [--task-poll SECONDS] [--notify-webhook URL] [--notify-principals hash|id] [--notify-secret whsec_...] [--notify-secrets-file FILE] [--event-secret NAME=whsec_...]... [--event-secrets-file FILE] [--public-url URL] [--no-scheduler] [--store-principal-names] [--audit] [--inspect MODULE] [--allow-replays] [--round-budget MS]';

/** The help of `baton serve`, with the way to run it that fits how it was started. */
function help(): string {
  return `usage: ${USAGE}

Serve the flows a module exports as MCP tools (and prompts or resources, per its "expose" export).

  --http HOST:PORT     stateless Streamable HTTP at http://HOST:PORT/mcp (port 0 picks a free one);
                       GET /healthz (200, or 503 when the ledger does not answer) and GET /metrics
                       (Prometheus text) answer there too, without a bearer token
  --stdio              stdio (2026-07-28 and 2025-era clients)
  --ledger URL         sqlite:PATH, postgres://... or memory: (every flow becomes one-time); without
                       one, flows that need a ledger are left out with a warning; with one, flows
                       that await decisions by others come with the tools baton_inbox,
                       baton_decide, baton_requests, baton_resume and baton_withdraw
  --ttl SECONDS        lifetime of a requestState (default 1800, at most --max-ttl)
  --max-ttl SECONDS    longest lifetime of any state (default 2592000: 30 days, at most 366 days); a state
                       waiting on a deadline lives until it plus 5 minutes, and a flow that waits longer
                       than this allows fails at start-up
  --auth-tokens FILE   JSON object token -> principal id, or token -> {"principal": "bob", "roles":
                       ["manager"]}; other callers get HTTP 401 (HTTP only); tokens need at least
                       16 characters
  --oauth-issuer URL   accept access tokens of this OAuth/OpenID issuer instead (JWTs checked against
                       its JWKS: iss, aud, exp/nbf with 30 s tolerance, RS/PS/ES/EdDSA only); serves
                       /.well-known/oauth-protected-resource; scopes baton:call, baton:decide; the
                       principal is "<iss>#<sub>"; not with --auth-tokens
  --oauth-audience URL the resource URL tokens must name in aud, compared exactly as given (no
                       trailing slash added) and named so in the metadata (default: the served /mcp
                       URL; give the public URL behind a proxy)
  --roles-claim PATH   claim (dotted path) holding roles or groups (default roles; Keycloak:
                       realm_access.roles)
  --principal-claim NAME
                       claim naming the account (default sub)
  --group-roles FILE   JSON object group -> role or [roles], applied to the roles claim's values
                       (only mapped groups give roles)
  --introspection-client FILE
                       {"client_id", "client_secret"} of this server at the issuer: opaque tokens
                       are checked by introspection (RFC 7662), answers cached up to 5 minutes
  --login-client-id ID this server's web client at the --oauth-issuer: serves the decision pages
                       /inbox and /decide/<id>, where people sign in (authorization code with PKCE)
                       and decide; needs --ledger
  --login-client-secret-file FILE
                       that client's secret, on one line
  --roles ROLE,...     the local user's roles over --stdio (who may make which decisions)
  --wait-in-call SECONDS
                       how long one call waits for someone else's decision, or for durable steps
                       still running after the round budget, before it completes with a "waiting"
                       (or "working") result and the request id (default 20, at most 600)
  --task-poll SECONDS  the poll interval a task waiting on a person suggests to clients that follow
                       tasks (default 5; running steps and questions to the requester: a fifth of it)
  --notify-webhook URL POST JSON to URL for each notification; never delays a round. With a ledger:
                       decision.requested, decision.made, request.ended (a parked request ended:
                       completed, expired, withdrawn, terminated) and flow.notification (a flow's
                       notify(), e.g. a reminder), as Standard Webhooks from the ledger's outbox, at
                       least once; without one: each decision requested or made, best effort
  --notify-principals hash|id
                       how the webhook names requesters and deciders: keyed hashes (default) or ids
  --notify-secret whsec_...[,whsec_...]
                       sign webhooks (Standard Webhooks: webhook-id, webhook-timestamp,
                       webhook-signature); several during a rotation, newest first; with a ledger the
                       notifications go through its outbox (written with the round, delivered at
                       least once under a stable webhook-id)
  --notify-secrets-file FILE
                       the same, one secret per line (keeps secrets out of the process list)
  --event-secret NAME=whsec_...
                       accept POST /events/NAME signed with this Standard Webhooks secret (NAME "*":
                       every event); repeatable, several per name during a rotation; without one,
                       only a bearer token with the scope baton:events may send events
  --event-secrets-file FILE
                       the same, one NAME=whsec_... per line (keeps secrets out of the process list)
  --public-url URL     this server's external base (e.g. https://baton.example.com): every
                       decision.requested notification carries data.url = URL/decide/<id>, the
                       signed-in decision page (the link carries no secret); with --login-client-id,
                       the pages' origin: the sign-in returns to URL/auth/callback (default: the
                       served origin, loopback only); without the pages, a warning at start-up, and
                       the link answers a page that says how to decide here (tools, decision API)
  --no-scheduler       this instance fires no durable timers (by default every instance with a ledger
                       fires due timers of parked requests, polling every second)
  --store-principal-names
                       store readable principal ids in the ledger beside their keyed hashes
                       (requesters, deciders, audited callers); by default no table holds one
  --audit              record an audit entry per round on the ledger's database (needs --ledger)
  --inspect MODULE     a module whose default export is an XState inspector (an observer, a
                       function, or an object with "inspect", e.g. from @statelyai/inspect); every
                       flow instance reports as one run; sensitive values are redacted; over
                       --stdio, what it prints on stdout goes to stderr
  --allow-replays      without --ledger, serve flows with durable steps anyway: their steps run
                       inside the round and a retried or replayed round runs them AGAIN
  --round-budget MS    time budget of a round's invoked work (default 10000); durable steps still
                       running when it ends keep running and the call continues on a later round

environment:
  BATON_KEYS           comma-separated base64url secrets (>= 32 random bytes each; "baton keygen"
                       prints one); the first mints, all verify. Unset: a random per-process key,
                       refused on a ledger holding requests sealed under other keys

${runHint('serve')}
`;
}

/** Parsed and checked `serve` options. */
interface ServeOptions {
  readonly module: string;
  readonly http?: { host: string; port: number };
  readonly ledger?: string;
  readonly ttlSeconds?: number;
  readonly maxTtlSeconds?: number;
  readonly authTokens?: string;
  readonly oauth?: OAuthServeFlags;
  /** `--login-client-id` and the rest: the decision pages. */
  readonly pages?: PagesServeFlags;
  readonly roles?: readonly string[];
  readonly waitInCallSeconds?: number;
  /** `--task-poll SECONDS`: the poll interval of a task waiting on a person. */
  readonly taskPollSeconds?: number;
  readonly notifyWebhook?: string;
  readonly notifyPrincipals?: 'hash' | 'id';
  /** `--notify-secret` / `--notify-secrets-file`: Standard Webhooks secrets, newest first. */
  readonly notifySecrets?: readonly string[];
  /** `--event-secret` / `--event-secrets-file`: Standard Webhooks secrets by event name (or `*`). */
  readonly eventSecrets?: ReadonlyMap<string, readonly string[]>;
  /** `--public-url`: the external base of decision links (`decisionLinks.ts`). */
  readonly publicUrl?: string;
  /** `--no-scheduler`: this instance fires no timers. */
  readonly noScheduler?: boolean;
  readonly storePrincipalNames?: boolean;
  readonly audit?: boolean;
  readonly inspect?: string;
  readonly allowReplays?: boolean;
  readonly roundBudgetMs?: number;
}

function parseHostPort(value: string): { host: string; port: number } {
  const match = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(value);
  const port = match ? Number(match[2]) : Number.NaN;
  if (!match || port > 65535) throw usageError(`--http expects HOST:PORT (e.g. 127.0.0.1:8080), got "${value}"`);
  return { host: match[1]!, port };
}

/**
 * The longest `--ttl` or `--max-ttl` accepted: 366 days. A state's expiry is a 48-bit count of
 * milliseconds (the codec's limit, about the year 10889); far below that, a state meant to live
 * longer than a year is a mistake, not a setting.
 */
const LONGEST_TTL_SECONDS = 366 * 86_400;

/** A `--ttl`-like flag: whole seconds from 1 to {@link LONGEST_TTL_SECONDS}. */
function seconds(flag: string, value: string): number {
  const parsed = Number(value);
  if (!/^\d+$/.test(value) || parsed < 1) {
    throw usageError(`${flag} expects a whole number of seconds >= 1, got "${value}"`);
  }
  if (parsed > LONGEST_TTL_SECONDS) {
    throw usageError(`${flag} is at most ${LONGEST_TTL_SECONDS} seconds (366 days), got ${value}`);
  }
  return parsed;
}

/** The flags the command parses (node:util `parseArgs` options); the README documents each. */
export const OPTIONS = {
  http: { type: 'string' },
  stdio: { type: 'boolean' },
  ledger: { type: 'string' },
  ttl: { type: 'string' },
  'max-ttl': { type: 'string' },
  'auth-tokens': { type: 'string' },
  roles: { type: 'string' },
  'wait-in-call': { type: 'string' },
  'task-poll': { type: 'string' },
  'notify-webhook': { type: 'string' },
  'notify-principals': { type: 'string' },
  'notify-secret': { type: 'string' },
  'notify-secrets-file': { type: 'string' },
  'event-secret': { type: 'string', multiple: true },
  'event-secrets-file': { type: 'string' },
  'no-scheduler': { type: 'boolean' },
  'public-url': { type: 'string' },
  'store-principal-names': { type: 'boolean' },
  audit: { type: 'boolean' },
  inspect: { type: 'string' },
  'allow-replays': { type: 'boolean' },
  'round-budget': { type: 'string' },
  ...OAUTH_OPTIONS,
  ...PAGES_OPTIONS,
  help: { type: 'boolean', short: 'h' },
} as const;

function parseServeArgs(argv: string[]): ServeOptions | 'help' {
  const parsed = parseFlags(argv, OPTIONS, USAGE);
  const { values, positionals } = parsed;
  if (values.help) return 'help';
  if (positionals.length !== 1) {
    throw usageError(positionals.length === 0 ? 'missing <flows-module>' : 'expected one <flows-module>', USAGE);
  }
  if ((values.http === undefined) === (values.stdio === undefined)) {
    throw usageError('give exactly one of --http HOST:PORT or --stdio', USAGE);
  }
  const ttlSeconds = values.ttl === undefined ? undefined : seconds('--ttl', values.ttl);
  const maxTtlSeconds = values['max-ttl'] === undefined ? undefined : seconds('--max-ttl', values['max-ttl']);
  const cap = maxTtlSeconds ?? DEFAULT_MAX_TTL_SECONDS;
  if (ttlSeconds !== undefined && ttlSeconds > cap) {
    throw usageError(
      `--ttl ${ttlSeconds} is longer than --max-ttl ${cap}${maxTtlSeconds === undefined ? ' (the default)' : ''}, the longest a state may live: lower --ttl or raise --max-ttl`,
    );
  }
  if (values['auth-tokens'] !== undefined && values.stdio) {
    throw usageError('--auth-tokens applies to --http only (over stdio the principal is the local user)');
  }
  if (values.roles !== undefined && values.http !== undefined) {
    throw usageError('--roles applies to --stdio only (over HTTP the roles come from the --auth-tokens file)');
  }
  const roles = values.roles === undefined ? undefined : parseRoles(values.roles);
  const oauth = parseOAuthFlags(values, USAGE);
  const pages = parsePagesFlags(values, USAGE);
  const waitInCallSeconds = values['wait-in-call'] === undefined ? undefined : waitInCall(values['wait-in-call']);
  const taskPoll = values['task-poll'];
  if (
    taskPoll !== undefined &&
    !(/^\d+(\.\d+)?$/.test(taskPoll) && Number(taskPoll) >= 0.2 && Number(taskPoll) <= 3600)
  ) {
    throw usageError(`--task-poll expects seconds from 0.2 to 3600, got "${taskPoll}"`);
  }
  const notifyWebhook = values['notify-webhook'] === undefined ? undefined : webhookUrl(values['notify-webhook']);
  const notifyPrincipals = values['notify-principals'];
  if (notifyPrincipals !== undefined && notifyPrincipals !== 'hash' && notifyPrincipals !== 'id') {
    throw usageError(`--notify-principals expects hash or id, got "${notifyPrincipals}"`);
  }
  const notifySecrets = parseNotifySecrets(values['notify-secret'], values['notify-secrets-file']);
  if (notifySecrets.length > 0 && notifyWebhook === undefined) {
    throw usageError('--notify-secret signs what --notify-webhook sends: give --notify-webhook too', USAGE);
  }
  const eventSecrets = parseEventSecrets(values['event-secret'], values['event-secrets-file']);
  if (eventSecrets.size > 0 && values.http === undefined) {
    throw usageError('--event-secret signs what POST /events/<name> receives: it needs --http', USAGE);
  }
  const publicUrl = values['public-url'] === undefined ? undefined : publicUrlFlag(values['public-url']);
  if (values['no-scheduler'] && values.ledger === undefined) {
    throw usageError('--no-scheduler turns off the scheduler of a ledger: give --ledger too', USAGE);
  }
  if (values.audit && values.ledger === undefined) {
    throw usageError("--audit records on the ledger's database: give --ledger too", USAGE);
  }
  if (values['store-principal-names'] && values.ledger === undefined) {
    throw usageError('--store-principal-names stores names in the ledger: give --ledger too', USAGE);
  }
  const budget = values['round-budget'];
  if (budget !== undefined && !(/^\d+$/.test(budget) && Number(budget) >= 1 && Number(budget) <= 600_000)) {
    throw usageError(`--round-budget expects a whole number of ms from 1 to 600000, got "${budget}"`);
  }
  return {
    module: positionals[0]!,
    ...(values.audit ? { audit: true } : {}),
    ...(values['store-principal-names'] ? { storePrincipalNames: true } : {}),
    ...(values['allow-replays'] ? { allowReplays: true } : {}),
    ...(budget !== undefined ? { roundBudgetMs: Number(budget) } : {}),
    ...(values.inspect !== undefined ? { inspect: values.inspect } : {}),
    ...(values.http !== undefined ? { http: parseHostPort(values.http) } : {}),
    ...(values.ledger !== undefined ? { ledger: values.ledger } : {}),
    ...(ttlSeconds !== undefined ? { ttlSeconds } : {}),
    ...(maxTtlSeconds !== undefined ? { maxTtlSeconds } : {}),
    ...(values['auth-tokens'] !== undefined ? { authTokens: values['auth-tokens'] } : {}),
    ...(oauth ? { oauth } : {}),
    ...(pages ? { pages } : {}),
    ...(roles ? { roles } : {}),
    ...(waitInCallSeconds !== undefined ? { waitInCallSeconds } : {}),
    ...(taskPoll !== undefined ? { taskPollSeconds: Number(taskPoll) } : {}),
    ...(notifyWebhook ? { notifyWebhook } : {}),
    ...(notifyPrincipals ? { notifyPrincipals } : {}),
    ...(notifySecrets.length > 0 ? { notifySecrets } : {}),
    ...(values['no-scheduler'] ? { noScheduler: true } : {}),
    ...(eventSecrets.size > 0 ? { eventSecrets } : {}),
    ...(publicUrl ? { publicUrl } : {}),
  };
}

/** A secrets file's entries: one a line, blank lines and `#` comments skipped (unreadable: a usage error). */
function secretsFileLines(flag: string, file: string): string[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw usageError(`${flag}: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

/** `--event-secret NAME=whsec_…` (repeatable) and `--event-secrets-file FILE` (one `NAME=whsec_…` per line). */
function parseEventSecrets(flags: readonly string[] | undefined, file: string | undefined): Map<string, string[]> {
  const entries = [...(flags ?? []), ...(file === undefined ? [] : secretsFileLines('--event-secrets-file', file))];
  const secrets = new Map<string, string[]>();
  entries.forEach((entry, i) => {
    const at = entry.indexOf('=');
    const name = at > 0 ? entry.slice(0, at).trim() : '';
    if (name !== ANY_EVENT && !/^[A-Za-z0-9_.-]{1,64}$/.test(name)) {
      throw usageError(`--event-secret (${i + 1}) expects NAME=whsec_... (NAME: an event name or *)`);
    }
    let secret: string;
    try {
      secret = checkWebhookSecret(entry.slice(at + 1).trim());
    } catch (error) {
      throw usageError(`--event-secret (${i + 1}): ${(error as Error).message}`);
    }
    secrets.set(name, [...(secrets.get(name) ?? []), secret]);
  });
  return secrets;
}

/** `--notify-secret whsec_…[,whsec_…]` (newest first, comma-separated during a rotation) and `--notify-secrets-file FILE` (one per line). */
function parseNotifySecrets(flag: string | undefined, file: string | undefined): string[] {
  const secrets = [
    ...(flag === undefined ? [] : flag.split(',').map((secret) => secret.trim())),
    ...(file === undefined ? [] : secretsFileLines('--notify-secrets-file', file)),
  ];
  return secrets.map((secret, i) => {
    try {
      return checkWebhookSecret(secret);
    } catch (error) {
      throw usageError(`--notify-secret (${i + 1}): ${(error as Error).message}`);
    }
  });
}

/**
 * How often the scheduler looks for due timers, ms: a due timer fires within about this plus the
 * time to play the rounds due before it (and the skew between instances' clocks).
 */
const SCHEDULER_POLL_MS = 1000;

/**
 * How long a claim on a due timer holds before another instance takes it over (an instance that
 * died mid-fire): `BATON_SCHEDULER_LEASE_MS`, default 30,000 ms, at least 1,000.
 */
function schedulerLeaseMs(): number {
  const value = Number(process.env.BATON_SCHEDULER_LEASE_MS ?? 30_000);
  return Number.isFinite(value) ? Math.max(1000, value) : 30_000;
}

/** The longest `--wait-in-call`: ten minutes (a call held longer outlives most clients' patience). */
const LONGEST_WAIT_IN_CALL_SECONDS = 600;

/** `--wait-in-call SECONDS`: whole seconds from 0 to {@link LONGEST_WAIT_IN_CALL_SECONDS}. */
function waitInCall(value: string): number {
  const parsed = Number(value);
  if (!/^\d+$/.test(value) || parsed > LONGEST_WAIT_IN_CALL_SECONDS) {
    throw usageError(
      `--wait-in-call expects a whole number of seconds from 0 to ${LONGEST_WAIT_IN_CALL_SECONDS}, got "${value}"`,
    );
  }
  return parsed;
}

/** `--roles a,b`: comma-separated role names (letters, digits, `_.:-`). */
function parseRoles(value: string): string[] {
  const roles = value.split(',').map((role) => role.trim());
  if (roles.some((role) => !/^[A-Za-z0-9_.:-]{1,64}$/.test(role))) {
    throw usageError(`--roles expects comma-separated role names (e.g. manager,finance), got "${value}"`);
  }
  return [...new Set(roles)];
}

/** `--public-url URL`: an absolute http: or https: URL (`parsePublicUrl`). */
function publicUrlFlag(value: string): string {
  try {
    return parsePublicUrl(value);
  } catch (error) {
    throw usageError((error as Error).message);
  }
}

/** `--notify-webhook URL`: an http: or https: URL. */
function webhookUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw usageError(`--notify-webhook expects an http: or https: URL, got "${value}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw usageError(`--notify-webhook expects an http: or https: URL, got "${value}"`);
  }
  return url.href;
}

function keyRing(warn: (message: string) => void): KeyRing {
  const env = process.env.BATON_KEYS;
  if (env === undefined || env.trim() === '') {
    warn(
      'BATON_KEYS is not set: using a random per-process key (states die with this process and no other instance can serve them)',
    );
    return createKeyRing([generateKey()]);
  }
  try {
    return parseKeyRingEnv(env);
  } catch (error) {
    throw new CliError(oneLine(error));
  }
}

function warn(message: string): void {
  process.stderr.write(`baton: warning: ${message}\n`);
}

function logEvent(event: RunnerLogEvent): void {
  if (event.type === 'invalid_state') {
    process.stderr.write(
      `baton: rejected requestState for ${event.flow}: ${event.reason}${event.detail ? ` (${event.detail})` : ''}\n`,
    );
  } else if (event.type === 'flow_error' && event.error instanceof UnknownKeyError) {
    // Another instance's request (other BATON_KEYS): nothing failed, it cannot be read here.
    process.stderr.write(`baton: request ${event.fid} of ${event.flow} ${event.error.message}\n`);
  } else if (event.type === 'flow_error') {
    process.stderr.write(`baton: flow ${event.flow} (${event.fid}) failed: ${oneLine(event.error)}\n`);
  } else if (event.type === 'hook_error') {
    process.stderr.write(`baton: ${event.hook} hook failed: ${oneLine(event.error)}\n`);
  } else if (event.type === 'ledger_upgrade') {
    process.stderr.write(
      `baton: rewrote ${event.rewritten} decision${event.rewritten === 1 ? '' : 's'} recorded before ledger schema 6: deciders are keyed hashes now\n`,
    );
  } else if (event.type === 'ledger_upgrade_error') {
    process.stderr.write(
      `baton: could not rewrite the deciders recorded before ledger schema 6 (the next start tries again): ${oneLine(event.error)}\n`,
    );
  }
}

/** Something opened during start-up, closed in reverse order on the way out. */
type Closer = { what: string; close: () => Promise<void> | void };

/**
 * SIGINT and SIGTERM while `baton serve` runs. The listeners are removed on the way out (a failed
 * start-up included), so a later Ctrl-C is never swallowed by a listener of a finished command.
 */
function listenForSignals(): { signalled: Promise<NodeJS.Signals>; dispose(): void } {
  let onSignal: (signal: NodeJS.Signals) => void = () => {};
  const signalled = new Promise<NodeJS.Signals>((resolve) => {
    onSignal = resolve;
  });
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    signalled,
    dispose() {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

/**
 * Leave out the flows that need a ledger when there is none, one warning line each; with
 * `--allow-replays`, flows that need one only for their durable steps are served, one warning line.
 */
function servableFlows(
  flows: readonly Flow[],
  hasLedger: boolean,
  module: string,
  warn: (message: string) => void,
  allowReplays = false,
): Flow[] {
  if (hasLedger) return [...flows];
  const replayed = (flow: Flow) => allowReplays && needsLedgerOnlyForSteps(flow);
  const served = flows.filter((flow) => !flow.needsLedger || replayed(flow));
  for (const flow of flows) {
    if (replayed(flow)) {
      warn(`serving ${flow.name} without a ledger (--allow-replays): a retried or replayed round runs its steps again`);
      continue;
    }
    if (!flow.needsLedger) continue;
    const why =
      flow.decisions.length > 0
        ? 'it awaits decisions by others, which are kept in a ledger'
        : needsLedgerOnlyForSteps(flow)
          ? 'its durable steps record their results in a ledger (or accept re-runs with --allow-replays)'
          : 'it needs a ledger';
    warn(`not serving ${flow.name}: ${why}; start with --ledger URL to serve it`);
  }
  if (served.length === 0) {
    throw new CliError(
      `every flow of ${module} needs a ledger (${flows.map((flow) => flow.name).join(', ')}): start with --ledger URL (e.g. sqlite:./baton.db)`,
    );
  }
  return served;
}

/** Run `baton serve`; resolves with the exit code once the server has been stopped. */
export async function run(argv: string[]): Promise<number> {
  const options = parseServeArgs(argv);
  if (options === 'help') {
    process.stderr.write(help());
    return 0;
  }
  // Warnings of the start-up are printed once it has succeeded: a fatal mistake is the only line.
  const warnings: string[] = [];
  const later = (message: string) => void warnings.push(message);
  // Listen before anything starts, so a signal during start-up still closes what was opened.
  const signals = listenForSignals();
  // Closed on the way out: the server first (no new rounds), then the rest in reverse order.
  let server: Closer | undefined;
  const opened: Closer[] = [];
  let rejectReady: ((error: Error) => void) | undefined;
  let pagesFailed: (() => void) | undefined;
  try {
    // Everything that needs no flows is checked before the flows module is loaded.
    const keys = keyRing(later);
    if (options.ledger !== undefined) checkLedgerUrl(options.ledger);
    const verifier = options.authTokens
      ? createStaticTokenVerifier(
          await loadAuthTokens(options.authTokens).catch((e) => Promise.reject(new CliError(oneLine(e)))),
        )
      : undefined;
    // The issuer is discovered before the port is bound: unreachable, it is the one line said.
    const oauth = options.oauth ? await prepareOAuth(options.oauth) : undefined;
    let oauthVerifier: Promise<OAuthTokenVerifier> | undefined;
    // Bind the port before loading flows and opening the ledger, so a taken port is said before
    // anything else and leaves no database behind. A request that arrives meanwhile waits for
    // the server to be ready (or fails with it).
    let resolveReady!: (factory: McpServerFactory) => void;
    let resolveRunner!: (runner: Runner) => void;
    const whenRunner = new Promise<Runner>((resolve) => {
      resolveRunner = resolve;
    });
    const whenReady = new Promise<McpServerFactory>((resolve, reject) => {
      resolveReady = resolve;
      rejectReady = reject;
    });
    whenReady.catch(() => {});
    let url: URL | undefined;
    let unchecked: string | undefined;
    const metrics = new ServingMetrics();
    let ledgerSource: LedgerSource = { ready: false };
    const pages = options.pages ? pendingPages(options.pages) : undefined;
    pagesFailed = pages?.fail;
    if (options.http && options.publicUrl && !pages) later(startupWarning(options.oauth ? 'login-client' : 'issuer'));
    let loopback = false;
    if (options.http) {
      const serving = await serveHttp({
        factory: async (ctx) => (await whenReady)(ctx),
        host: options.http.host,
        port: options.http.port,
        authenticatedRoutes: createDecisionApi({
          runner: () => whenRunner,
          requireScope: oauth !== undefined,
          onError: (error) => process.stderr.write(`baton: decision api: ${oneLine(error)}\n`),
        }),
        routes: new Map([
          ...createObservabilityRoutes({
            metrics,
            ledger: () => ledgerSource,
            keyIds: keys.keys.map((key) => key.kid),
          }),
          ...(pages?.routes ?? []),
          // Decision links without the signed-in pages: a page saying how this server takes decisions.
          ...(options.publicUrl && !pages ? decideElsewhereRoutes() : []),
          // POST /events/<name> (`events.ts`): signed, or a bearer with the scope baton:events.
          [
            `${EVENTS_PATH}*`,
            createEventsRoute({
              runner: () => whenRunner,
              resourceMetadataUrl: () => (oauth && url ? resourceMetadataUrl(oauth.flags.audience ?? url) : undefined),
              ...(options.eventSecrets ? { secrets: options.eventSecrets } : {}),
              ...(verifier ? { verifier } : {}),
              ...(oauth
                ? {
                    verifier: {
                      verifyAccessToken: async (token: string) => (await oauthVerifier!).verifyAccessToken(token),
                    },
                  }
                : {}),
              onError: (error) => process.stderr.write(`baton: events: ${oneLine(error)}\n`),
            }),
          ],
        ]),
        ...(verifier ? { verifier } : {}),
        ...(oauth
          ? {
              // The verifier needs the served URL (the default audience): requests wait for it.
              verifier: {
                verifyAccessToken: async (token: string) => (await oauthVerifier!).verifyAccessToken(token),
              },
              oauth: {
                authorizationServer: oauth.metadata,
                ...(oauth.flags.audience ? { resource: oauth.flags.audience } : {}),
              },
            }
          : {}),
        // subscriptions/listen with taskIds: notifications/tasks from the ledger (`subscriptions/`).
        listen: createTaskListen({
          runner: () => whenRunner,
          onError: (error) => process.stderr.write(`baton: listen: ${oneLine(error)}\n`),
        }),
        onError: (error) => process.stderr.write(`baton: http: ${oneLine(error)}\n`),
      }).catch((error) =>
        Promise.reject(new CliError(`cannot listen on ${options.http!.host}:${options.http!.port}: ${oneLine(error)}`)),
      );
      server = { what: 'the server', close: () => serving.close() };
      url = serving.url;
      loopback = serving.loopback;
      if (oauth) {
        if (!oauth.flags.audience && !serving.loopback) {
          later(
            `--oauth-audience is not set: tokens must name ${serving.url.href} in aud; give the public URL of /mcp (e.g. --oauth-audience https://baton.example.com/mcp)`,
          );
        }
        oauthVerifier = oauth.verifier(serving.url);
        oauthVerifier.catch(() => {});
        await oauthVerifier;
      }
      // From the address bound, not its spelling: `127.1` is loopback, `0.0.0.0` is not.
      unchecked = servingWarning(serving);
    }
    const loaded = await loadFlowsModule(options.module).catch((error) => {
      throw new CliError(oneLine(error));
    });
    const flows = servableFlows(
      loaded.flows,
      options.ledger !== undefined,
      options.module,
      later,
      options.allowReplays,
    );

    // Over stdio, stdout is the JSON-RPC stream: from here on (the inspector module is loaded and
    // called from now), what anything else prints there goes to stderr; the transport alone
    // writes to the real stdout.
    const wire = url ? undefined : guardStdout();
    if (wire) opened.push({ what: 'stdout', close: wire.restore });
    const inspector = options.inspect ? await loadInspector(options.inspect) : undefined;
    if (inspector?.stop) opened.push({ what: 'the inspector', close: inspector.stop });
    let ledger: Ledger | undefined;
    let audit: (AuditLog & { close(): Promise<void> }) | undefined;
    if (options.ledger !== undefined) {
      try {
        ledger = await openLedger(options.ledger);
        const openedLedger = ledger;
        opened.push({ what: 'the ledger', close: () => openedLedger.close() });
        if (options.audit) {
          const openedAudit = await openAuditLog(options.ledger);
          audit = openedAudit;
          opened.push({ what: 'the audit log', close: () => openedAudit.close() });
        }
      } catch (error) {
        throw new CliError(`cannot open ledger: ${oneLine(error)}`);
      }
      if (!process.env.BATON_KEYS?.trim()) await refuseForeignLedger(ledger, createRequestStateCodec({ keys }));
    }

    // With a ledger that has an outbox, notifications are written with the rounds and delivered from it, signed.
    const outboxed = options.notifyWebhook !== undefined && ledger?.claimOutbox !== undefined;
    const webhook =
      options.notifyWebhook && !outboxed
        ? createWebhookNotifier({ url: options.notifyWebhook, onError: (message) => warn(message) })
        : undefined;
    if (webhook) opened.push({ what: 'the webhook', close: () => webhook.flush(2000).then(() => webhook.close()) });
    if (webhook && !flows.some((flow) => flow.decisions.length > 0)) {
      later('--notify-webhook has nothing to send: no served flow awaits decisions');
    }
    const runner = createRunner({
      flows,
      codec: createRequestStateCodec({ keys, ...(options.ttlSeconds ? { ttlSeconds: options.ttlSeconds } : {}) }),
      ...(ledger ? { ledger } : {}),
      ...(audit ? { audit } : {}),
      ...(inspector ? { inspect: inspector.inspect } : {}),
      ...(options.ttlSeconds ? { ttlSeconds: options.ttlSeconds } : {}),
      ...(options.maxTtlSeconds ? { maxTtlSeconds: options.maxTtlSeconds } : {}),
      ...(options.waitInCallSeconds !== undefined ? { waitInCallSeconds: options.waitInCallSeconds } : {}),
      ...(options.taskPollSeconds !== undefined ? { taskPollMs: options.taskPollSeconds * 1000 } : {}),
      ...(webhook ? { onDecisionRequested: webhook.onDecisionRequested, onDecided: webhook.onDecided } : {}),
      ...(options.notifyPrincipals ? { hookPrincipals: options.notifyPrincipals } : {}),
      ...(outboxed ? { outbox: true } : {}),
      ...(options.publicUrl ? { decisionUrl: decisionPageUrl(options.publicUrl) } : {}),
      ...(options.storePrincipalNames ? { storePrincipalNames: true } : {}),
      ...(options.allowReplays ? { allowReplays: true } : {}),
      ...(options.roundBudgetMs !== undefined ? { roundBudgetMs: options.roundBudgetMs } : {}),
      log: logEvent,
    });
    if (outboxed && ledger) {
      const deliverer = createOutboxDeliverer({
        ledger,
        url: options.notifyWebhook!,
        secrets: options.notifySecrets ?? [],
        onError: (message) => warn(message),
        onAttempt: (attempt) => metrics.outboxAttempt(attempt),
      });
      opened.push({ what: 'the webhook', close: () => deliverer.stop() });
    }
    if (ledger?.claimDueRequests && !options.noScheduler) {
      const scheduler = createScheduler({
        runner,
        pollMs: SCHEDULER_POLL_MS,
        leaseMs: schedulerLeaseMs(),
        onFire: (report) => metrics.timersFired(report),
        onError: (error) => warn(`scheduler: ${oneLine(error)}`),
      });
      opened.push({ what: 'the scheduler', close: () => scheduler.stop() });
    }
    const stdioRoles = options.roles ?? [];
    const factory = createFlowServerFactory({
      runner,
      roles: (ctx) => defaultRoles(ctx, stdioRoles),
      metrics,
      ...(oauth ? { requireScopes: true } : {}),
      ...(loaded.expose ? { expose: loaded.expose } : {}),
      // One server per stdio connection: it can tell its client how its tasks move.
      ...(url ? {} : { taskNotifications: true }),
      onError: (error) => process.stderr.write(`baton: internal error: ${oneLine(error)}\n`),
    });
    resolveReady(factory);
    if (pages && oauth && url) {
      pages.start({
        runner,
        keys,
        metadata: oauth.metadata,
        mapping: oauth.mapping,
        served: url,
        loopback,
        onError: (error) => process.stderr.write(`baton: pages: ${oneLine(error)}\n`),
      });
    }
    resolveRunner(runner);
    ledgerSource = ledger ? { ready: true, ledger } : { ready: true };
    for (const message of warnings) warn(message);
    const count = `${flows.length} flow${flows.length === 1 ? '' : 's'}`;

    let stopped: Promise<unknown>;
    if (url) {
      stopped = new Promise(() => {});
      if (unchecked) warn(unchecked);
      process.stderr.write(`baton: serving ${count} at ${url.href}\n`);
    } else {
      const handle = serveStdio(factory, {
        ...(wire ? { transport: new StdioServerTransport(process.stdin, wire.stdout) } : {}),
        onerror: (error) => process.stderr.write(`baton: stdio: ${oneLine(error)}\n`),
      });
      server = { what: 'the server', close: () => handle.close() };
      stopped = new Promise((resolve) => process.stdin.once('close', resolve));
      process.stderr.write(`baton: serving ${count} on stdio\n`);
    }

    await Promise.race([stopped, signals.signalled]);
    // Whatever still holds the event loop after a clean close must not keep the process alive.
    setTimeout(() => process.exit(process.exitCode ?? 0), 2000).unref();
    return 0;
  } catch (error) {
    rejectReady?.(new Error('the server failed to start'));
    pagesFailed?.();
    throw error;
  } finally {
    signals.dispose();
    for (const { what, close } of [...(server ? [server] : []), ...opened.reverse()]) {
      await Promise.resolve()
        .then(close)
        .catch((error) => warn(`closing ${what}: ${oneLine(error)}`));
    }
  }
}

/** Refuse an unsupported `--ledger` URL before anything is started. */
function checkLedgerUrl(url: string): void {
  try {
    parseLedgerUrl(url);
  } catch (error) {
    throw new CliError(`cannot open ledger: ${oneLine(error)}`);
  }
}

/**
 * Send what is printed to stdout (`console.log`, `info`, `debug`, `process.stdout.write`) to
 * stderr instead, and return a stdout for the transport alone (the real one, writing with the
 * original `write`), and how to undo it.
 */
function guardStdout(): { stdout: NodeJS.WriteStream; restore: () => void } {
  const out = process.stdout;
  const originalWrite = out.write;
  const write = originalWrite.bind(out);
  const consoleMethods = { log: console.log, info: console.info, debug: console.debug };
  out.write = ((chunk: unknown, ...rest: unknown[]) =>
    (process.stderr.write as (...args: unknown[]) => boolean)(chunk, ...rest)) as typeof out.write;
  console.log = console.info = console.debug = (...args: unknown[]) => console.error(...args);
  const stdout = new Proxy(out, {
    get(target, property) {
      if (property === 'write') return write;
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return {
    stdout,
    restore() {
      out.write = originalWrite;
      Object.assign(console, consoleMethods);
    },
  };
}

/** An `--inspect` module's inspector, and how to stop it when it has a `stop()` (Stately's do). */
interface LoadedInspector {
  readonly inspect: Inspector;
  readonly stop?: () => Promise<void> | void;
}

/**
 * Load `--inspect MODULE`: its default export must be an inspection observer or function, or an
 * object whose `inspect` is one (what `@statelyai/inspect` creates; its `stop()` is called on exit).
 */
async function loadInspector(specifier: string): Promise<LoadedInspector> {
  const url = pathToFileURL(resolve(process.cwd(), specifier)).href;
  let loaded: { default?: unknown };
  try {
    loaded = await import(url);
  } catch (error) {
    throw new CliError(`cannot load --inspect module ${specifier}: ${oneLine(error)}`);
  }
  const candidate = loaded.default as { inspect?: unknown; stop?: unknown } | undefined;
  const isInspector = (value: unknown): value is Inspector =>
    typeof value === 'function' || (typeof value === 'object' && value !== null && 'next' in value);
  const stop =
    candidate && typeof candidate === 'object' && typeof candidate.stop === 'function'
      ? { stop: () => (candidate.stop as () => Promise<void> | void).call(candidate) }
      : {};
  if (isInspector(candidate)) return { inspect: candidate, ...stop };
  if (candidate && typeof candidate === 'object' && isInspector(candidate.inspect)) {
    // The object itself: the runner uses its `inspect`, and its `flush()` when it has one.
    return { inspect: candidate as Inspector, ...stop };
  }
  throw new CliError(
    `--inspect module ${specifier} must export an inspector (an observer, a function, or an object with "inspect") as default`,
  );
}
