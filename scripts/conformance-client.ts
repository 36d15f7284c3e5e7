/**
 * Runs the official MCP conformance suite's client scenarios (`@modelcontextprotocol/conformance`,
 * pinned in scripts/conformance.ts) against `baton call`: for each scenario the suite starts its
 * own mock server (and, for `auth/*`, its own authorization server) and runs
 * `scripts/lib/conformanceClientCommand.ts <server URL>`, which maps the scenario to the
 * `baton call` command lines a user would type and runs them as real `baton call` processes.
 *
 *   tsx scripts/conformance-client.ts [--scenario NAME]... [--concurrency N] [--table FILE] [--verbose]
 *                                     [--cli sources|built]
 *
 * `--cli built` runs `baton call` from the test build (`packages/adapters/dist-test`, written by
 * the test suite's global setup) instead of its sources through tsx (the default).
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
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CLI_ENV, cliFrom } from './lib/batonCli.js';
import { AUTH_SCENARIOS, PROTOCOL_SCENARIOS } from './lib/clientScenarios.js';
import {
  CONFORMANCE_PACKAGE,
  CONFORMANCE_VERSION,
  chosenScenarios,
  concurrencyOf,
  countChecks,
  countsText,
  ensureInstalled,
  indented,
  log,
  oneLine,
  ROOT,
  resultsTable,
  runQueue,
  runScenario,
  withSection,
} from './lib/conformanceSuite.js';

/** Every client scenario `baton call` is measured against. */
export const CLIENT_SCENARIOS = [...PROTOCOL_SCENARIOS, ...AUTH_SCENARIOS] as const;

/** The section of docs/conformance.md this harness writes. */
export const CLIENT_SECTION = 'client';

const COMMAND = `${process.execPath} --import tsx ${join(ROOT, 'scripts', 'lib', 'conformanceClientCommand.ts')}`;
const SCENARIO_TIMEOUT_MS = 120_000;

/** One client scenario: the suite runs `COMMAND` (baton call) against its own mock servers. */
function clientScenario(scenario: string, resultsDir: string) {
  const args = ['client', '--command', COMMAND, '--scenario', scenario, '--timeout', '60000'];
  return runScenario(scenario, args, join(resultsDir, scenario.replaceAll('/', '_')), {
    timeoutMs: SCENARIO_TIMEOUT_MS,
    warningsFail: true,
    exitReason: (output) => /CLIENT EXITED WITH ERROR[^\n]*|Client timed out[^\n]*/.exec(output)?.[0],
  });
}

/** The client section of docs/conformance.md, from this run. */
function clientTable(results: Parameters<typeof resultsTable>[0]): string {
  return [
    '## Client: `baton call`',
    '',
    'The 2026-07-28 client scenarios that apply to a terminal client, and every `auth/*` scenario of the',
    'frozen 2026-07-28 requirement set with `baton call --oauth` (`pnpm conformance:client`; what is left out',
    'and why: the comment at the top of `scripts/conformance-client.ts`). A warning fails a client scenario.',
    '',
    resultsTable(results, (scenario) => (scenario.startsWith('auth/') ? 'authorization' : '2026-07-28')),
  ].join('\n');
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      scenario: { type: 'string', multiple: true },
      concurrency: { type: 'string', default: '2' },
      verbose: { type: 'boolean', default: false },
      table: { type: 'string' },
      cli: { type: 'string' },
    },
    allowPositionals: false,
  });
  // The suite starts the client command with this process's environment.
  process.env[CLI_ENV] = cliFrom(values.cli);
  const scenarios = chosenScenarios(values.scenario, CLIENT_SCENARIOS);
  const concurrency = concurrencyOf(values.concurrency!);
  await ensureInstalled();
  const started = Date.now();
  log(`› ${CONFORMANCE_PACKAGE}@${CONFORMANCE_VERSION} client scenarios against baton call`);
  const resultsDir = mkdtempSync(join(tmpdir(), 'baton-conformance-client-'));
  try {
    const results = await runQueue(scenarios, concurrency, (scenario) => clientScenario(scenario, resultsDir));
    let warnings = 0;
    for (const result of results) {
      warnings += countChecks(result).warned.length;
      const reason = result.ok ? '' : `: ${oneLine(result.reason ?? '', 2000)}`;
      log(
        `${result.ok ? 'PASS' : 'FAIL'} ${result.scenario} ${countsText(result)}${reason} ${(result.ms / 1000).toFixed(1)}s`,
      );
      if (values.verbose || !result.ok) log(indented(result.output));
    }
    if (values.table) {
      const page = existsSync(values.table) ? readFileSync(values.table, 'utf8') : '';
      writeFileSync(values.table, withSection(page, CLIENT_SECTION, clientTable(results)));
      log(`› wrote the client table into ${values.table}`);
    }
    const failed = results.filter((r) => !r.ok).length;
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
