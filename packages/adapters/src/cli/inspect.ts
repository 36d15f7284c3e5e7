/**
 * `baton inspect <flows-module> [--audit URL] [--http 127.0.0.1:PORT]`: a
 * local page on loopback showing the module's flows as state graphs (nested
 * and parallel states as containers, the states that ask for input marked)
 * and, with `--audit`, the recorded instances: the path each took round by
 * round, highlighted on the graph, with a timeline, what each waits for
 * and from whom (read from the requests parked in the ledger, which shares
 * the audit log's database), who started it, its arguments, times and
 * decisions; the page updates live. Works offline: the page
 * loads nothing but this server. Non-loopback hosts are refused. The URL is
 * printed on stderr once ready; SIGINT and SIGTERM stop it.
 */
import type { Ledger } from '@baton/engine';
import { openAuditLog, openLedger } from '@baton/store';
import { loadFlowsModule } from '../flowsModule.js';
import { isLoopbackHost } from '../http.js';
import { serveInspect } from '../inspect/server.js';
import { CliError, oneLine, usageError } from './cliError.js';
import { parseFlags } from './parseFlags.js';

/** The command's synopsis, as `--help`, usage errors and the README show it. */
export const USAGE =
  'baton inspect <flows-module> [--audit sqlite:PATH|postgres://...|memory:] [--http 127.0.0.1:PORT]';

const HELP = `usage: ${USAGE}

Serve a local page showing the flows of a module as state graphs and, with --audit, the
recorded flow instances: where each stands, who started it, its arguments (flows with
auditValues), times and decisions, and the path it took round by round. Updates live.

  --audit URL        the audit log to read: sqlite:PATH, postgres://... or memory:
  --http HOST:PORT   loopback address to serve on (default 127.0.0.1:0, a free port)
`;

/** The flags the command parses (node:util `parseArgs` options); the README documents each. */
export const OPTIONS = {
  audit: { type: 'string' },
  http: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type StoreAuditLog = Awaited<ReturnType<typeof openAuditLog>>;

function parseHostPort(value: string): { host: string; port: number } {
  const match = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(value);
  const port = match ? Number(match[2]) : Number.NaN;
  if (!match || port > 65535) throw usageError(`--http expects HOST:PORT (e.g. 127.0.0.1:8080), got "${value}"`);
  if (!isLoopbackHost(match[1]!)) {
    throw usageError(`--http must be a loopback address (127.0.0.1, ::1 or localhost), got "${match[1]}"`);
  }
  return { host: match[1]!, port };
}

async function openAudit(url: string): Promise<StoreAuditLog> {
  try {
    // A reader: never prune (the server writing the trail owns its retention).
    return await openAuditLog(url, { pruneIntervalMs: 0 });
  } catch (error) {
    throw new CliError(`cannot open audit log: ${oneLine(error)}`);
  }
}

/** Run `baton inspect`; resolves with the exit code once stopped. */
export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, OPTIONS, USAGE);
  if (values.help) {
    process.stderr.write(HELP);
    return 0;
  }
  if (positionals.length !== 1) {
    throw usageError(positionals.length === 0 ? 'missing <flows-module>' : 'expected one <flows-module>', USAGE);
  }
  const http = values.http !== undefined ? parseHostPort(values.http) : { host: '127.0.0.1', port: 0 };
  const signalled = new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  const module = await loadFlowsModule(positionals[0]!).catch((error) => {
    throw new CliError(oneLine(error));
  });
  const audit = values.audit !== undefined ? await openAudit(values.audit) : undefined;
  // The ledger shares the audit log's database (`baton serve --audit` records there): its parked
  // requests say what each flow waits for. Not readable: the page derives it from the rounds.
  let requests: Ledger | undefined;
  if (values.audit !== undefined) {
    requests = await openLedger(values.audit, { pruneIntervalMs: 0 }).catch((error) => {
      process.stderr.write(`baton: warning: cannot read parked requests from the ledger: ${oneLine(error)}\n`);
      return undefined;
    });
  }
  try {
    const serving = await serveInspect({
      flows: module.flows,
      ...(audit ? { audit } : {}),
      ...(requests ? { requests } : {}),
      host: http.host,
      port: http.port,
      onError: (error) => process.stderr.write(`baton: inspect: ${oneLine(error)}\n`),
    }).catch((error) => Promise.reject(new CliError(`cannot listen on ${http.host}:${http.port}: ${oneLine(error)}`)));
    const count = `${module.flows.length} flow${module.flows.length === 1 ? '' : 's'}`;
    process.stderr.write(
      `baton: inspecting ${count}${audit ? '' : ' (no --audit: graphs only)'} at ${serving.url.href}\n`,
    );
    await signalled;
    setTimeout(() => process.exit(process.exitCode ?? 0), 2000).unref();
    await serving.close();
    return 0;
  } finally {
    await requests
      ?.close()
      .catch((error) => process.stderr.write(`baton: warning: closing the ledger: ${oneLine(error)}\n`));
    await audit
      ?.close()
      .catch((error) => process.stderr.write(`baton: warning: closing the audit log: ${oneLine(error)}\n`));
  }
}
