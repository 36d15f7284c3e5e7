/**
 * The official MCP conformance suite against `baton serve`: runs
 * `scripts/conformance.ts` (which installs the pinned suite and a Node 22 into
 * `.tmp/conformance/` on first use, serves `test/conformance/fixtures.ts` on a
 * free loopback port, and runs the suite's `input-required-result-*` server
 * scenarios) and asserts that all 14 passed.
 */
import { spawn } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const TEN_MINUTES = 600_000;

/** The 14 `input-required-result-*` server scenarios of @modelcontextprotocol/conformance 0.2.0-alpha.11+. */
const EXPECTED = [
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
];

function runHarness(): Promise<{ code: number | null; output: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(join(ROOT, 'node_modules', '.bin', 'tsx'), ['scripts/conformance.ts'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => resolvePromise({ code, output }));
  });
}

describe('official MCP conformance suite', () => {
  it(
    'passes all 14 input-required-result-* server scenarios against baton serve',
    async () => {
      const { code, output } = await runHarness();
      const verdicts = new Map<string, string>();
      for (const match of output.matchAll(/^(PASS|FAIL) (input-required-result-[a-z-]+) /gm)) {
        verdicts.set(match[2]!, match[1]!);
      }
      const report = `\n${output}`;
      expect([...verdicts.keys()].sort(), report).toEqual([...EXPECTED].sort());
      expect(
        [...verdicts].filter(([, verdict]) => verdict !== 'PASS').map(([scenario]) => scenario),
        report,
      ).toEqual([]);
      expect(output, report).toMatch(/^RESULT: 14\/14 scenarios passed, 0 failed/m);
      expect(code, report).toBe(0);
    },
    TEN_MINUTES,
  );
});
