/**
 * Runs the official MCP conformance suite's client scenarios (`@modelcontextprotocol/conformance`,
 * pinned in scripts/conformance.ts) against `baton call`: for each scenario the suite starts its
 * own mock server (and, for `auth/*`, its own authorization server) and runs
 * `scripts/lib/conformanceClientCommand.ts <server URL>`, which maps the scenario to the
 * `baton call` command lines a user would type and runs them as real `baton call` processes.
 *
 *   tsx scripts/conformance-client.ts [--scenario NAME]... [--concurrency N] [--verbose]
 *
 * `CLIENT_SCENARIOS`: the 2026-07-28 protocol scenarios that apply to a terminal client
 * (`tools_call`, `request-metadata`, `sep-2322-client-request-state`, `http-standard-headers`,
 * `http-custom-headers`, `http-invalid-tool-headers`, `json-schema-ref-no-deref`,
 * `json-schema-2020-12-preservation`) and every `auth/*` scenario of the frozen 2026-07-28
 * requirement set, with `baton call --oauth` (the browser sign-in: `$BROWSER` is
 * `scripts/lib/conformanceBrowser.mjs`, which follows the authorization redirect as a person's
 * browser would; `auth/pre-registration` with `--client-id`/`--client-secret-file`;
 * `auth/basic-cimd` with a Client ID Metadata Document URL as `--client-id`).
 *
 * Left out, as they do not apply to `baton call`: `initialize`, `sse-retry` and
 * `elicitation-sep1034-client-defaults` (revisions before 2026-07-28: baton call speaks
 * 2026-07-28, where there is no `initialize` handshake and no server-to-client stream); the
 * `auth/2025-03-26-*` back-compat scenarios (2025-03-26 only); the extension scenarios
 * (`auth/client-credentials-jwt` needs a private key baton call has no flag for; the
 * `client-credentials-basic`, enterprise-managed, DPoP and workload-identity ones are auth
 * extensions it does not implement; `sep-2640-*` skills: Baton serves and reads no skills).
 *
 * Output contract (parsed by test/conformance-client.test.ts), as scripts/conformance.ts:
 *   `PASS <scenario> (<passed>/<total> checks[, <n> warning(s)])`
 *   `FAIL <scenario> (<passed>/<total> checks): <reason>`
 *   `RESULT: <passed>/<total> scenarios passed, <failed> failed, <warnings> warning(s) in <seconds>s`
 * A scenario passes when the suite passes it (no failed check, no warning, and the client's
 * exit accepted). All traffic stays on loopback.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CONFORMANCE_PACKAGE, CONFORMANCE_VERSION, NODE22_PACKAGE } from './conformance.js';
import { AUTH_SCENARIOS, PROTOCOL_SCENARIOS } from './lib/clientScenarios.js';

/** Every client scenario `baton call` is measured against. */
export const CLIENT_SCENARIOS = [...PROTOCOL_SCENARIOS, ...AUTH_SCENARIOS] as const;

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CACHE = join(ROOT, '.tmp', 'conformance');
const CLI = join(CACHE, 'node_modules', CONFORMANCE_PACKAGE, 'dist', 'index.js');
const NODE22 = join(CACHE, 'node_modules', NODE22_PACKAGE, 'bin', 'node');
const COMMAND = `${process.execPath} --import tsx ${join(ROOT, 'scripts', 'lib', 'conformanceClientCommand.ts')}`;
const SCENARIO_TIMEOUT_MS = 120_000;

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'SKIPPED' | 'INFO';
  errorMessage?: string;
}

function log(line: string) {
  process.stdout.write(`${line}\n`);
}

function findChecks(dir: string): Check[] | undefined {
  if (!existsSync(dir)) return undefined;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isFile() && entry.name === 'checks.json') return JSON.parse(readFileSync(path, 'utf8')) as Check[];
    if (entry.isDirectory()) {
      const found = findChecks(path);
      if (found) return found;
    }
  }
  return undefined;
}

/** Run the suite for one scenario; resolves to its exit code and output. */
function suite(scenario: string, outputDir: string): Promise<{ code: number | null; output: string }> {
  return new Promise((done, reject) => {
    const child = spawn(
      NODE22,
      [CLI, 'client', '--command', COMMAND, '--scenario', scenario, '--output-dir', outputDir, '--timeout', '60000'],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    const timer = setTimeout(() => {
      output += `\n[harness] killed after ${SCENARIO_TIMEOUT_MS} ms\n`;
      child.kill('SIGKILL');
    }, SCENARIO_TIMEOUT_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, output });
    });
  });
}

interface ScenarioResult {
  scenario: string;
  ok: boolean;
  checks: Check[];
  reason?: string;
  output: string;
  ms: number;
}

async function runScenario(scenario: string, resultsDir: string): Promise<ScenarioResult> {
  const started = Date.now();
  const outputDir = join(resultsDir, scenario.replaceAll('/', '_'));
  const exited = await suite(scenario, outputDir);
  const base = { scenario, output: exited.output, ms: Date.now() - started };
  const checks = findChecks(outputDir) ?? [];
  if (checks.length === 0) return { ...base, ok: false, checks, reason: `no checks recorded (exit ${exited.code})` };
  const failures = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
  if (failures.length > 0) {
    const reason = failures.map((c) => `${c.id}: ${c.errorMessage ?? c.status}`).join(' | ');
    return { ...base, ok: false, checks, reason };
  }
  if (exited.code !== 0) {
    const said = /CLIENT EXITED WITH ERROR[^\n]*|Client timed out[^\n]*/.exec(exited.output)?.[0];
    return { ...base, ok: false, checks, reason: `the suite exited ${exited.code}${said ? `: ${said}` : ''}` };
  }
  return { ...base, ok: true, checks };
}

function oneLine(text: string, max = 400): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      scenario: { type: 'string', multiple: true },
      concurrency: { type: 'string', default: '2' },
      verbose: { type: 'boolean', default: false },
    },
    allowPositionals: false,
  });
  const scenarios = values.scenario ?? [...CLIENT_SCENARIOS];
  for (const scenario of scenarios) {
    if (!(CLIENT_SCENARIOS as readonly string[]).includes(scenario)) {
      throw new Error(`unknown scenario "${scenario}"; expected one of: ${CLIENT_SCENARIOS.join(', ')}`);
    }
  }
  const concurrency = Number.parseInt(values.concurrency!, 10);
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error('--concurrency must be a positive integer');
  if (!existsSync(CLI) || !existsSync(NODE22)) {
    throw new Error(
      `${CONFORMANCE_PACKAGE}@${CONFORMANCE_VERSION} is not installed in .tmp/conformance: run "pnpm -s conformance --scenario tools-list" once (it installs it)`,
    );
  }
  const started = Date.now();
  log(`› ${CONFORMANCE_PACKAGE}@${CONFORMANCE_VERSION} client scenarios against baton call`);
  const resultsDir = mkdtempSync(join(tmpdir(), 'baton-conformance-client-'));
  try {
    const results = new Map<string, ScenarioResult>();
    const queue = [...scenarios];
    const worker = async () => {
      for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
        results.set(next, await runScenario(next, resultsDir));
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, scenarios.length) }, worker));
    let warnings = 0;
    for (const scenario of scenarios) {
      const result = results.get(scenario)!;
      const scored = result.checks.filter((c) => c.status === 'SUCCESS' || c.status === 'FAILURE');
      const passed = scored.filter((c) => c.status === 'SUCCESS').length;
      const warned = result.checks.filter((c) => c.status === 'WARNING').length;
      warnings += warned;
      const counts = `${passed}/${scored.length} checks${warned ? `, ${warned} warning(s)` : ''}`;
      log(
        `${result.ok ? 'PASS' : 'FAIL'} ${scenario} (${counts})${result.ok ? '' : `: ${oneLine(result.reason ?? '', 2000)}`} ${(result.ms / 1000).toFixed(1)}s`,
      );
      if (values.verbose || !result.ok) {
        log(
          result.output
            .split('\n')
            .map((line) => `     | ${line}`)
            .join('\n'),
        );
      }
    }
    const failed = scenarios.filter((s) => !results.get(s)!.ok).length;
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    log(
      `RESULT: ${scenarios.length - failed}/${scenarios.length} scenarios passed, ${failed} failed, ${warnings} warning(s) in ${seconds}s`,
    );
    return failed === 0 ? 0 : 1;
  } finally {
    rmSync(resultsDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`conformance-client: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(2);
    },
  );
}
