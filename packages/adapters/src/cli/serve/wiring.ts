/**
 * Wiring `baton serve`: from checked options to a running server, in the start-up order that keeps
 * its guarantees. Everything that needs no flows is checked first (keys, the ledger URL, the
 * tokens file, the OAuth issuer), then the port is bound, then the flows module is loaded and the
 * ledger opened (a taken port leaves no database behind); the runner, the scheduler, the outbox
 * deliverer, the webhook and the MCP server factory are built on them. Warnings are printed only
 * once serving starts, so on a failure the one line saying what is wrong is all it prints: it
 * closes what it had opened, in reverse order, and removes its signal listeners. SIGINT and
 * SIGTERM close the server first (no new rounds), then the rest.
 */
import {
  type AuditLog,
  createKeyRing,
  createRequestStateCodec,
  createRunner,
  createScheduler,
  type Flow,
  type FullLedger,
  generateKey,
  type KeyRing,
  needsLedgerOnlyForSteps,
  parseKeyRingEnv,
  type Runner,
  type RunnerLogEvent,
  UnknownKeyError,
} from '@baton/engine';
import { openAuditLog, openLedger, parseLedgerUrl } from '@baton/store';
import type { McpServerFactory, OAuthTokenVerifier } from '@modelcontextprotocol/server';
import { StdioServerTransport, serveStdio } from '@modelcontextprotocol/server/stdio';
import { createStaticTokenVerifier, loadAuthTokens } from '../../auth/authTokens.js';
import { decisionPageUrl } from '../../delivery/decisionLinks.js';
import { createOutboxDeliverer } from '../../delivery/outboxDelivery.js';
import { createWebhookNotifier } from '../../delivery/webhook.js';
import { loadFlowsModule } from '../../flowsModule.js';
import { createDecisionApi } from '../../http/decisionApi.js';
import { createEventsRoute, EVENTS_PATH } from '../../http/events.js';
import { serveHttp, servingWarning } from '../../http/serve.js';
import { defaultRoles } from '../../mcp/callContext.js';
import { createDirectToolCalls, type DirectToolCalls } from '../../mcp/directToolCalls.js';
import { resourceMetadataUrl } from '../../mcp/protectedResource.js';
import { createFlowServerFactory, type FlowServerOptions } from '../../mcp/serverFactory.js';
import { createTaskListen } from '../../mcp/subscriptions/taskListen.js';
import { ServingMetrics } from '../../observability/metrics.js';
import { createObservability, type LedgerSource } from '../../observability/observability.js';
import type { Telemetry } from '../../observability/otlp.js';
import { decideElsewhereRoutes, startupWarning } from '../../pages/decideElsewhere.js';
import { CliError, oneLine } from '../cliError.js';
import { refuseForeignLedger } from '../foreignLedger.js';
import { prepareOAuth } from '../oauthServe.js';
import { pendingPages } from '../pagesServe.js';
import type { ServeOptions } from './checks.js';
import { loadInspector } from './inspector.js';
import { guardStdout, listenForSignals } from './process.js';

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

/**
 * Start serving `options` (checked by `checks.ts`); resolves with the exit code once the server
 * has been stopped. `warnings` so far (and the start-up's own) are printed once it has succeeded:
 * a fatal mistake is the only line.
 */
export async function startServing(options: ServeOptions, warnings: string[]): Promise<number> {
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
    // --otlp: the OpenTelemetry SDKs, loaded only then, registered before any round; flushed last.
    let telemetry: Telemetry | undefined;
    if (options.otlp !== undefined) {
      const { startTelemetry } = await import('../../observability/otlp.js');
      const started = startTelemetry(options.otlp);
      telemetry = started;
      opened.push({ what: 'the OpenTelemetry exporter', close: () => started.shutdown() });
    }
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
    // tools/call of flows without the SDK's per-request server, once the flows are loaded (before: the SDK's path, which waits).
    let direct: DirectToolCalls | undefined;
    let url: URL | undefined;
    let unchecked: string | undefined;
    const metrics = new ServingMetrics();
    let ledgerSource: LedgerSource = { ready: false };
    // `/healthz`, `/metrics`, and the figures the OpenTelemetry meter reads (with --otlp): one source.
    const observability = createObservability({
      metrics,
      ledger: () => ledgerSource,
      keyIds: keys.keys.map((key) => key.kid),
    });
    const pages = options.pages ? pendingPages(options.pages) : undefined;
    pagesFailed = pages?.fail;
    if (options.http && options.publicUrl && !pages) later(startupWarning(options.oauth ? 'login-client' : 'issuer'));
    let loopback = false;
    if (options.http) {
      const serving = await serveHttp({
        factory: async (ctx) => (await whenReady)(ctx),
        direct: (call) => direct?.(call),
        host: options.http.host,
        port: options.http.port,
        authenticatedRoutes: createDecisionApi({
          runner: () => whenRunner,
          requireScope: oauth !== undefined,
          onError: (error) => process.stderr.write(`baton: decision api: ${oneLine(error)}\n`),
        }),
        routes: new Map([
          ...observability.routes,
          ...(pages?.routes ?? []),
          // Decision links without the signed-in pages: a page saying how this server takes decisions.
          ...(options.publicUrl && !pages ? decideElsewhereRoutes() : []),
          // POST /events/<name> (`http/events.ts`): signed, or a bearer with the scope baton:events.
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
              onSent: (sent) => metrics.eventSent(sent),
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
    let ledger: FullLedger | undefined;
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

    // With a ledger (every @baton/store ledger has an outbox), notifications are written with the rounds and delivered from it, signed.
    const outboxed = options.notifyWebhook !== undefined && ledger !== undefined;
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
    if (ledger && !options.noScheduler) {
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
    const serverOptions: FlowServerOptions = {
      runner,
      roles: (ctx) => defaultRoles(ctx, stdioRoles),
      metrics,
      ...(oauth ? { requireScopes: true } : {}),
      ...(loaded.expose ? { expose: loaded.expose } : {}),
      // One server per stdio connection: it can tell its client how its tasks move.
      ...(url ? {} : { taskNotifications: true }),
      onError: (error) => process.stderr.write(`baton: internal error: ${oneLine(error)}\n`),
    };
    const factory = createFlowServerFactory(serverOptions);
    if (url) direct = createDirectToolCalls(serverOptions);
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
    // --otlp: the figures of /metrics as OpenTelemetry metrics, exported one last time before the ledger closes.
    if (telemetry) {
      const started = telemetry;
      const { observeMetrics } = await import('../../observability/otelMetrics.js');
      const unobserve = observeMetrics(observability.collect);
      opened.push({
        what: 'the OpenTelemetry metrics',
        close: () => started.flushMetrics().finally(unobserve),
      });
    }
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
