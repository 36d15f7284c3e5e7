/**
 * `baton inspect <flows-module> [--audit URL] [--http 127.0.0.1:PORT]`: a
 * local page on loopback showing the module's flows as state graphs (nested
 * and parallel states as containers, the states that ask for input marked)
 * and, with `--audit`, the recorded instances: the path each took round by
 * round, highlighted on the graph, with a timeline, what each waits for
 * and from whom (read from the requests parked in the ledger, which shares
 * the audit log's database), who started it, its arguments, times and
 * decisions; the page updates live. Works offline: the page
 * loads nothing but this server. With `BATON_KEYS` (the servers' keys) and
 * `--audit`, an operator cancels, terminates or retries a step of a waiting
 * run from its view, through the same runner functions as `baton runs`: on
 * loopback as the login name, with no sign-in. Beyond loopback only behind
 * the decision pages' sign-in (`--oauth-issuer`, `--login-client-id`,
 * `--login-client-secret-file`, `--public-url`, `--roles-claim`): every page
 * needs a session, the actions the `operator` role. The URL is printed on
 * stderr once ready; SIGINT and SIGTERM stop it.
 */
import { createRequestStateCodec, createRunner, type FullLedger, type KeyRing, parseKeyRingEnv } from '@baton/engine';
import { openAuditLog, openLedger } from '@baton/store';
import { discoverOAuthIssuer } from '../auth/oauthVerifier.js';
import { loadFlowsModule } from '../flowsModule.js';
import { isLoopbackHost } from '../http/serve.js';
import { serveInspect } from '../inspect/server.js';
import type { InspectSignIn } from '../inspect/signIn.js';
import { createWebLogin } from '../pages/webLogin.js';
import { CliError, oneLine, usageError } from './cliError.js';
import { requireExistingLedger } from './existingLedger.js';
import { parsePublicUrl, readClientSecretFile } from './pagesServe.js';
import { parseFlags } from './parseFlags.js';
import { operatorName } from './runsActions.js';

/** The command's synopsis, as `--help`, usage errors and the README show it. */
export const USAGE =
  'baton inspect <flows-module> [--audit sqlite:PATH|postgres://...|memory:] [--http HOST:PORT] [--oauth-issuer URL --login-client-id ID --login-client-secret-file FILE --public-url URL [--roles-claim PATH]]';

const HELP = `usage: ${USAGE}

Serve a local page showing the flows of a module as state graphs and, with --audit, the
recorded flow instances: where each stands, who started it, its arguments (flows with
auditValues), times and decisions, and the path it took round by round. Updates live.

  --audit URL        the audit log to read: sqlite:PATH, postgres://... or memory:
  --http HOST:PORT   address to serve on (default 127.0.0.1:0, a free port); beyond loopback
                     only with sign-in (the flags below)
  --oauth-issuer URL the OpenID issuer people sign in at (required beyond loopback)
  --login-client-id ID
                     this page's web client at the issuer (redirect URI <public-url>/auth/callback)
  --login-client-secret-file FILE
                     the web client's secret, on one line
  --public-url URL   the page's external origin (https://inspect.example.com): the only Host answered
  --roles-claim PATH claim (dotted path) holding roles (default roles); actions need role operator

With BATON_KEYS (the servers' keys) and --audit, an operator cancels, terminates or retries a
step of a waiting run from its page, as baton runs does: on loopback as the login name.
`;

/** The flags the command parses (node:util `parseArgs` options); the README documents each. */
export const OPTIONS = {
  audit: { type: 'string' },
  http: { type: 'string' },
  'oauth-issuer': { type: 'string' },
  'login-client-id': { type: 'string' },
  'login-client-secret-file': { type: 'string' },
  'public-url': { type: 'string' },
  'roles-claim': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The sign-in flags, checked: all four (and `--roles-claim` optionally), or none. */
interface SignInFlags {
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly publicUrl: URL;
  readonly rolesClaim?: string;
}

const SIGN_IN_FLAGS = ['oauth-issuer', 'login-client-id', 'login-client-secret-file', 'public-url'] as const;

function parseSignIn(values: { readonly [K in keyof typeof OPTIONS]?: string | boolean }): SignInFlags | undefined {
  const given = SIGN_IN_FLAGS.filter((flag) => values[flag] !== undefined);
  if (given.length === 0) {
    if (values['roles-claim'] !== undefined)
      throw usageError('--roles-claim needs --oauth-issuer and the sign-in flags', USAGE);
    return undefined;
  }
  const missing = SIGN_IN_FLAGS.filter((flag) => values[flag] === undefined);
  if (missing.length > 0) {
    throw usageError(`sign-in needs ${missing.map((flag) => `--${flag}`).join(', ')} too`, USAGE);
  }
  const rolesClaim = values['roles-claim'] as string | undefined;
  if (rolesClaim !== undefined && !/^[A-Za-z0-9_:/.-]{1,200}$/.test(rolesClaim)) {
    throw usageError(`--roles-claim expects a claim name or dotted path, got "${rolesClaim}"`, USAGE);
  }
  return {
    issuer: values['oauth-issuer'] as string,
    clientId: values['login-client-id'] as string,
    clientSecret: readClientSecretFile(values['login-client-secret-file'] as string, USAGE),
    publicUrl: parsePublicUrl(values['public-url'] as string, USAGE),
    ...(rolesClaim !== undefined ? { rolesClaim } : {}),
  };
}

/** `BATON_KEYS`, or `undefined` when unset. */
function keysFromEnv(): KeyRing | undefined {
  const env = process.env.BATON_KEYS;
  if (env === undefined || env.trim() === '') return undefined;
  try {
    return parseKeyRingEnv(env);
  } catch (error) {
    throw new CliError(`BATON_KEYS: ${oneLine(error)}`);
  }
}

/** The sign-in, its issuer discovered (an unreachable issuer is one line). */
async function prepareSignIn(flags: SignInFlags, keys: KeyRing): Promise<InspectSignIn> {
  const metadata = await discoverOAuthIssuer(flags.issuer).catch((error) => {
    throw new CliError(oneLine(error));
  });
  return {
    login: createWebLogin({
      metadata,
      clientId: flags.clientId,
      clientSecret: flags.clientSecret,
      redirectUri: new URL('/auth/callback', flags.publicUrl),
      mapping: { issuer: metadata.issuer, ...(flags.rolesClaim ? { rolesClaim: flags.rolesClaim } : {}) },
    }),
    keys,
    publicUrl: flags.publicUrl,
  };
}

type StoreAuditLog = Awaited<ReturnType<typeof openAuditLog>>;

function parseHostPort(value: string): { host: string; port: number } {
  const match = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(value);
  const port = match ? Number(match[2]) : Number.NaN;
  if (!match || port > 65535) throw usageError(`--http expects HOST:PORT (e.g. 127.0.0.1:8080), got "${value}"`);
  return { host: match[1]!, port };
}

async function openAudit(url: string): Promise<StoreAuditLog> {
  requireExistingLedger(url);
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
  const signInFlags = parseSignIn(values);
  if (!isLoopbackHost(http.host) && !signInFlags) {
    throw usageError(
      `--http ${http.host} is beyond loopback (127.0.0.1, ::1 or localhost): give sign-in too (--oauth-issuer, --login-client-id, --login-client-secret-file, --public-url)`,
    );
  }
  const keys = keysFromEnv();
  if (signInFlags && !keys) {
    throw new CliError('sign-in seals sessions under BATON_KEYS: set BATON_KEYS (the servers’ keys)');
  }
  const signIn = signInFlags ? await prepareSignIn(signInFlags, keys!) : undefined;
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
  let requests: FullLedger | undefined;
  if (values.audit !== undefined) {
    requests = await openLedger(values.audit, { pruneIntervalMs: 0 }).catch((error) => {
      process.stderr.write(`baton: warning: cannot read parked requests from the ledger: ${oneLine(error)}\n`);
      return undefined;
    });
  }
  // The actions: the runner functions `baton runs` calls, on the same ledger, audit trail and keys.
  const operators =
    audit && requests && keys
      ? createRunner({
          flows: module.flows,
          codec: createRequestStateCodec({ keys }),
          ledger: requests,
          audit,
          log: (event) => {
            if (event.type === 'flow_error') process.stderr.write(`baton: inspect: ${oneLine(event.error)}\n`);
          },
        }).operators
      : undefined;
  if (audit && requests && !keys) {
    process.stderr.write('baton: note: BATON_KEYS is not set: operator actions are off (runs are sealed)\n');
  }
  try {
    const serving = await serveInspect({
      flows: module.flows,
      ...(audit ? { audit } : {}),
      ...(requests ? { requests } : {}),
      ...(operators ? { operators } : {}),
      ...(signIn ? { signIn } : { localOperator: operatorName(undefined) }),
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
