/**
 * `baton serve <flows-module> (--http HOST:PORT | --stdio) [--ledger URL]
 * [--ttl SECONDS] [--auth-tokens FILE]`: the DESIGN.md section 5 contract.
 * Keys come from `BATON_KEYS` (comma-separated base64url secrets of at least
 * 32 bytes; the first mints, all verify), or a random per-process key with a
 * warning. With `--ledger` every flow is one-time. Over HTTP (stateless
 * Streamable HTTP at `/mcp`) the principal is the bearer token's principal
 * from `--auth-tokens` (unknown or missing token: 401) or `anonymous`; over
 * stdio it is the local user. The listening URL (or "on stdio") is printed on
 * stderr once ready; SIGINT and SIGTERM close the server and the ledger.
 */

import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  type AuditLog,
  createKeyRing,
  createRequestStateCodec,
  createRunner,
  generateKey,
  type Inspector,
  type KeyRing,
  type Ledger,
  parseKeyRingEnv,
  type RunnerLogEvent,
} from '@baton/engine';
import { openAuditLog, openLedger } from '@baton/store';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { createStaticTokenVerifier, loadAuthTokens } from '../authTokens.js';
import { loadFlowsModule } from '../flowsModule.js';
import { serveHttp, servingWarning } from '../http.js';
import { createFlowServerFactory } from '../serverFactory.js';
import { CliError, oneLine, usageError } from './cliError.js';
import { parseFlags } from './parseFlags.js';

const USAGE =
  'baton serve <flows-module> (--http HOST:PORT | --stdio) [--ledger sqlite:PATH|postgres://...] [--ttl SECONDS] [--auth-tokens FILE] [--audit] [--inspect MODULE]';

const HELP = `usage: ${USAGE}

Serve the flows a module exports as MCP tools (and prompts or resources, per its "expose" export).

  --http HOST:PORT     stateless Streamable HTTP at http://HOST:PORT/mcp (port 0 picks a free one)
  --stdio              stdio (2026-07-28 and 2025-era clients)
  --ledger URL         sqlite:PATH, postgres://... or memory: (every flow becomes one-time)
  --ttl SECONDS        lifetime of a requestState (default 1800)
  --auth-tokens FILE   JSON object token -> principal id; other callers get HTTP 401 (HTTP only)
  --audit              record an audit entry per round on the ledger's database (needs --ledger)
  --inspect MODULE     a module whose default export is an XState inspector (an observer or a
                       function, e.g. from @statelyai/inspect); every flow instance reports as one run

environment:
  BATON_KEYS           comma-separated base64url secrets (>= 32 bytes each); the first mints, all verify
`;

/** Parsed and checked `serve` options. */
interface ServeOptions {
  readonly module: string;
  readonly http?: { host: string; port: number };
  readonly ledger?: string;
  readonly ttlSeconds?: number;
  readonly authTokens?: string;
  readonly audit?: boolean;
  readonly inspect?: string;
}

function parseHostPort(value: string): { host: string; port: number } {
  const match = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(value);
  const port = match ? Number(match[2]) : Number.NaN;
  if (!match || port > 65535) throw usageError(`--http expects HOST:PORT (e.g. 127.0.0.1:8080), got "${value}"`);
  return { host: match[1]!, port };
}

const OPTIONS = {
  http: { type: 'string' },
  stdio: { type: 'boolean' },
  ledger: { type: 'string' },
  ttl: { type: 'string' },
  'auth-tokens': { type: 'string' },
  audit: { type: 'boolean' },
  inspect: { type: 'string' },
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
  let ttlSeconds: number | undefined;
  if (values.ttl !== undefined) {
    ttlSeconds = Number(values.ttl);
    if (!/^\d+$/.test(values.ttl) || ttlSeconds < 1) {
      throw usageError(`--ttl expects a whole number of seconds >= 1, got "${values.ttl}"`);
    }
  }
  if (values['auth-tokens'] !== undefined && values.stdio) {
    throw usageError('--auth-tokens applies to --http only (over stdio the principal is the local user)');
  }
  if (values.audit && values.ledger === undefined) {
    throw usageError("--audit records on the ledger's database: give --ledger too", USAGE);
  }
  return {
    module: positionals[0]!,
    ...(values.audit ? { audit: true } : {}),
    ...(values.inspect !== undefined ? { inspect: values.inspect } : {}),
    ...(values.http !== undefined ? { http: parseHostPort(values.http) } : {}),
    ...(values.ledger !== undefined ? { ledger: values.ledger } : {}),
    ...(ttlSeconds !== undefined ? { ttlSeconds } : {}),
    ...(values['auth-tokens'] !== undefined ? { authTokens: values['auth-tokens'] } : {}),
  };
}

function keyRing(): KeyRing {
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
  } else if (event.type === 'flow_error') {
    process.stderr.write(`baton: flow ${event.flow} (${event.fid}) failed: ${oneLine(event.error)}\n`);
  }
}

/** Run `baton serve`; resolves with the exit code once the server has been stopped. */
export async function run(argv: string[]): Promise<number> {
  const options = parseServeArgs(argv);
  if (options === 'help') {
    process.stderr.write(HELP);
    return 0;
  }
  // Listen before anything starts, so a signal during start-up still closes what was opened.
  const signalled = new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  const module = await loadFlowsModule(options.module).catch((error) => {
    throw new CliError(oneLine(error));
  });
  const keys = keyRing();
  const verifier = options.authTokens
    ? createStaticTokenVerifier(
        await loadAuthTokens(options.authTokens).catch((e) => Promise.reject(new CliError(oneLine(e)))),
      )
    : undefined;

  const inspect = options.inspect ? await loadInspector(options.inspect) : undefined;
  let ledger: Ledger | undefined;
  let audit: (AuditLog & { close(): Promise<void> }) | undefined;
  if (options.ledger !== undefined) {
    try {
      ledger = await openLedger(options.ledger);
      if (options.audit) audit = await openAuditLog(options.ledger);
    } catch (error) {
      await ledger?.close().catch(() => {});
      throw new CliError(`cannot open ledger: ${oneLine(error)}`);
    }
  }

  try {
    const runner = createRunner({
      flows: module.flows,
      codec: createRequestStateCodec({ keys, ...(options.ttlSeconds ? { ttlSeconds: options.ttlSeconds } : {}) }),
      ...(ledger ? { ledger } : {}),
      ...(audit ? { audit } : {}),
      ...(inspect ? { inspect } : {}),
      ...(options.ttlSeconds ? { ttlSeconds: options.ttlSeconds } : {}),
      log: logEvent,
    });
    const factory = createFlowServerFactory({
      runner,
      ...(module.expose ? { expose: module.expose } : {}),
      onError: (error) => process.stderr.write(`baton: internal error: ${oneLine(error)}\n`),
    });
    const count = `${module.flows.length} flow${module.flows.length === 1 ? '' : 's'}`;

    let close: () => Promise<void>;
    let stopped: Promise<void>;
    if (options.http) {
      const serving = await serveHttp({
        factory,
        host: options.http.host,
        port: options.http.port,
        ...(verifier ? { verifier } : {}),
        onError: (error) => process.stderr.write(`baton: http: ${oneLine(error)}\n`),
      }).catch((error) =>
        Promise.reject(new CliError(`cannot listen on ${options.http!.host}:${options.http!.port}: ${oneLine(error)}`)),
      );
      close = () => serving.close();
      stopped = new Promise(() => {});
      // From the address bound, not its spelling: `127.1` is loopback, `0.0.0.0` is not.
      const unchecked = servingWarning(serving);
      if (unchecked) warn(unchecked);
      process.stderr.write(`baton: serving ${count} at ${serving.url.href}\n`);
    } else {
      const handle = serveStdio(factory, {
        onerror: (error) => process.stderr.write(`baton: stdio: ${oneLine(error)}\n`),
      });
      close = () => handle.close();
      stopped = new Promise((resolve) => process.stdin.once('close', resolve));
      process.stderr.write(`baton: serving ${count} on stdio\n`);
    }

    await Promise.race([stopped, signalled]);
    // Whatever still holds the event loop after a clean close must not keep the process alive.
    setTimeout(() => process.exit(process.exitCode ?? 0), 2000).unref();
    await close().catch((error) => warn(`closing the server: ${oneLine(error)}`));
    return 0;
  } finally {
    await audit?.close().catch((error) => warn(`closing the audit log: ${oneLine(error)}`));
    await ledger?.close().catch((error) => warn(`closing the ledger: ${oneLine(error)}`));
  }
}

/** Load `--inspect MODULE`: its default export must be an inspection observer or function. */
async function loadInspector(specifier: string): Promise<Inspector> {
  const url = pathToFileURL(resolve(process.cwd(), specifier)).href;
  let loaded: { default?: unknown };
  try {
    loaded = await import(url);
  } catch (error) {
    throw new CliError(`cannot load --inspect module ${specifier}: ${oneLine(error)}`);
  }
  const candidate = loaded.default;
  const isObserver = typeof candidate === 'object' && candidate !== null && 'next' in candidate;
  if (typeof candidate !== 'function' && !isObserver) {
    throw new CliError(`--inspect module ${specifier} must export an inspector (an observer or a function) as default`);
  }
  return candidate as Inspector;
}
