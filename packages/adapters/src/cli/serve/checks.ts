/**
 * The checks of `baton serve`'s configuration that need no flows, on the raw values `sources.ts`
 * gathers: one transport, the lifetimes (`ttl` at most `maxTtl`), the auth and OAuth fields, the
 * webhook and event secrets (files read here), the fields that need a ledger. Every message names
 * the value as it was given: the flag (`--ttl expects a whole number of seconds >= 1, got "-5"`),
 * the environment variable (`BATON_TTL ...`) or the file and field (`baton.config.ts: ttl ...`).
 * The result, {@link ServeOptions}, is what `wiring.ts` starts. Inline secrets on the command
 * line are deprecated: each is a warning, printed once serving starts.
 */

import { readFileSync } from 'node:fs';
import { DEFAULT_MAX_TTL_SECONDS } from '@baton/engine';
import { parsePublicUrl } from '../../delivery/decisionLinks.js';
import { checkWebhookSecret } from '../../delivery/outboxDelivery.js';
import { ANY_EVENT } from '../../http/events.js';
import { usageError } from '../cliError.js';
import { type OAuthServeFlags, parseOAuthFlags } from '../oauthServe.js';
import { type PagesServeFlags, parsePagesFlags } from '../pagesServe.js';
import { type Gathered, labelOf } from './sources.js';

/** Parsed and checked `serve` options. */
export interface ServeOptions {
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
  /** `--public-url`: the external base of decision links (`delivery/decisionLinks.ts`). */
  readonly publicUrl?: string;
  /** `--otlp URL`: the OTLP/HTTP endpoint traces are exported to (`observability/otlp.ts`). */
  readonly otlp?: string;
  /** `--no-scheduler`: this instance fires no timers. */
  readonly noScheduler?: boolean;
  readonly storePrincipalNames?: boolean;
  readonly audit?: boolean;
  readonly inspect?: string;
  readonly allowReplays?: boolean;
  readonly roundBudgetMs?: number;
}

function parseHostPort(label: string, value: string): { host: string; port: number } {
  const match = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(value);
  const port = match ? Number(match[2]) : Number.NaN;
  if (!match || port > 65535) throw usageError(`${label} expects HOST:PORT (e.g. 127.0.0.1:8080), got "${value}"`);
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

/**
 * Check the gathered configuration; deprecation warnings go to `later`.
 * @throws CliError (exit 2) naming the value as given.
 */
export function checkServeConfig(gathered: Gathered, usage: string, later: (message: string) => void): ServeOptions {
  const { values, sources } = gathered;
  const name = (flag: string) => labelOf(flag, sources);
  const str = (flag: string) => values[flag] as string | undefined;
  const on = (flag: string) => values[flag] === true;
  const module = str('flows');
  if (module === undefined) {
    throw usageError('missing <flows-module> (or flows in baton.config.ts, or BATON_FLOWS)', usage);
  }
  if ((str('http') === undefined) === !on('stdio')) {
    throw usageError('give exactly one of --http HOST:PORT or --stdio', usage);
  }
  for (const [flag, instead] of [
    ['notify-secret', '--notify-secrets-file FILE or BATON_NOTIFY_SECRET'],
    ['event-secret', '--event-secrets-file FILE or BATON_EVENT_SECRETS'],
  ] as const) {
    if (sources.get(flag)?.kind === 'flag') {
      later(`--${flag} puts secrets in the process list and is deprecated: use ${instead}`);
    }
  }
  const ttlSeconds = str('ttl') === undefined ? undefined : seconds(name('ttl'), str('ttl')!);
  const maxTtlSeconds = str('max-ttl') === undefined ? undefined : seconds(name('max-ttl'), str('max-ttl')!);
  const cap = maxTtlSeconds ?? DEFAULT_MAX_TTL_SECONDS;
  if (ttlSeconds !== undefined && ttlSeconds > cap) {
    throw usageError(
      `${name('ttl')} ${ttlSeconds} is longer than ${name('max-ttl')} ${cap}${maxTtlSeconds === undefined ? ' (the default)' : ''}, the longest a state may live: lower --ttl or raise --max-ttl`,
    );
  }
  if (str('auth-tokens') !== undefined && on('stdio')) {
    throw usageError(`${name('auth-tokens')} applies to --http only (over stdio the principal is the local user)`);
  }
  if (str('roles') !== undefined && str('http') !== undefined) {
    throw usageError(`${name('roles')} applies to --stdio only (over HTTP the roles come from the --auth-tokens file)`);
  }
  const roles = str('roles') === undefined ? undefined : parseRoles(name('roles'), str('roles')!);
  const flagValues = values as Parameters<typeof parseOAuthFlags>[0] & Parameters<typeof parsePagesFlags>[0];
  const oauth = parseOAuthFlags(flagValues, usage);
  const pages = parsePagesFlags(flagValues, usage);
  const waitInCallSeconds =
    str('wait-in-call') === undefined ? undefined : waitInCall(name('wait-in-call'), str('wait-in-call')!);
  const taskPoll = str('task-poll');
  if (
    taskPoll !== undefined &&
    !(/^\d+(\.\d+)?$/.test(taskPoll) && Number(taskPoll) >= 0.2 && Number(taskPoll) <= 3600)
  ) {
    throw usageError(`${name('task-poll')} expects seconds from 0.2 to 3600, got "${taskPoll}"`);
  }
  const notifyWebhook =
    str('notify-webhook') === undefined ? undefined : webhookUrl(name('notify-webhook'), str('notify-webhook')!);
  const notifyPrincipals = str('notify-principals');
  if (notifyPrincipals !== undefined && notifyPrincipals !== 'hash' && notifyPrincipals !== 'id') {
    throw usageError(`${name('notify-principals')} expects hash or id, got "${notifyPrincipals}"`);
  }
  const notifySecrets = parseNotifySecrets(str('notify-secret'), str('notify-secrets-file'));
  if (notifySecrets.length > 0 && notifyWebhook === undefined) {
    throw usageError(
      `${name(str('notify-secret') === undefined ? 'notify-secrets-file' : 'notify-secret')} signs what --notify-webhook sends: give --notify-webhook too`,
      usage,
    );
  }
  const eventSecrets = parseEventSecrets(values['event-secret'] as string[] | undefined, str('event-secrets-file'));
  if (eventSecrets.size > 0 && str('http') === undefined) {
    throw usageError('--event-secret signs what POST /events/<name> receives: it needs --http', usage);
  }
  const publicUrl = str('public-url') === undefined ? undefined : publicUrlFlag(str('public-url')!);
  const otlp = str('otlp') === undefined ? undefined : webhookUrl(name('otlp'), str('otlp')!);
  if (on('no-scheduler') && str('ledger') === undefined) {
    throw usageError(`${name('no-scheduler')} turns off the scheduler of a ledger: give --ledger too`, usage);
  }
  if (on('audit') && str('ledger') === undefined) {
    throw usageError(`${name('audit')} records on the ledger's database: give --ledger too`, usage);
  }
  if (on('store-principal-names') && str('ledger') === undefined) {
    throw usageError(`${name('store-principal-names')} stores names in the ledger: give --ledger too`, usage);
  }
  const budget = str('round-budget');
  if (budget !== undefined && !(/^\d+$/.test(budget) && Number(budget) >= 1 && Number(budget) <= 600_000)) {
    throw usageError(`${name('round-budget')} expects a whole number of ms from 1 to 600000, got "${budget}"`);
  }
  const http = str('http');
  return {
    module,
    ...(on('audit') ? { audit: true } : {}),
    ...(on('store-principal-names') ? { storePrincipalNames: true } : {}),
    ...(on('allow-replays') ? { allowReplays: true } : {}),
    ...(budget !== undefined ? { roundBudgetMs: Number(budget) } : {}),
    ...(str('inspect') !== undefined ? { inspect: str('inspect')! } : {}),
    ...(http !== undefined ? { http: parseHostPort(name('http'), http) } : {}),
    ...(str('ledger') !== undefined ? { ledger: str('ledger')! } : {}),
    ...(ttlSeconds !== undefined ? { ttlSeconds } : {}),
    ...(maxTtlSeconds !== undefined ? { maxTtlSeconds } : {}),
    ...(str('auth-tokens') !== undefined ? { authTokens: str('auth-tokens')! } : {}),
    ...(oauth ? { oauth } : {}),
    ...(pages ? { pages } : {}),
    ...(roles ? { roles } : {}),
    ...(waitInCallSeconds !== undefined ? { waitInCallSeconds } : {}),
    ...(taskPoll !== undefined ? { taskPollSeconds: Number(taskPoll) } : {}),
    ...(notifyWebhook ? { notifyWebhook } : {}),
    ...(notifyPrincipals ? { notifyPrincipals } : {}),
    ...(notifySecrets.length > 0 ? { notifySecrets } : {}),
    ...(on('no-scheduler') ? { noScheduler: true } : {}),
    ...(eventSecrets.size > 0 ? { eventSecrets } : {}),
    ...(publicUrl ? { publicUrl } : {}),
    ...(otlp ? { otlp } : {}),
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

/** The longest `--wait-in-call`: ten minutes (a call held longer outlives most clients' patience). */
const LONGEST_WAIT_IN_CALL_SECONDS = 600;

/** `--wait-in-call SECONDS`: whole seconds from 0 to {@link LONGEST_WAIT_IN_CALL_SECONDS}. */
function waitInCall(label: string, value: string): number {
  const parsed = Number(value);
  if (!/^\d+$/.test(value) || parsed > LONGEST_WAIT_IN_CALL_SECONDS) {
    throw usageError(
      `${label} expects a whole number of seconds from 0 to ${LONGEST_WAIT_IN_CALL_SECONDS}, got "${value}"`,
    );
  }
  return parsed;
}

/** `--roles a,b`: comma-separated role names (letters, digits, `_.:-`). */
function parseRoles(label: string, value: string): string[] {
  const roles = value.split(',').map((role) => role.trim());
  if (roles.some((role) => !/^[A-Za-z0-9_.:-]{1,64}$/.test(role))) {
    throw usageError(`${label} expects comma-separated role names (e.g. manager,finance), got "${value}"`);
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

/** `--notify-webhook URL` (and `--otlp URL`): an http: or https: URL. */
function webhookUrl(label: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw usageError(`${label} expects an http: or https: URL, got "${value}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw usageError(`${label} expects an http: or https: URL, got "${value}"`);
  }
  return url.href;
}
