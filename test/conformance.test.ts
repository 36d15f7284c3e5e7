/**
 * The official MCP conformance suite against `baton serve`: runs
 * `scripts/conformance.ts` (which installs the pinned suite and a Node 22 into
 * `.tmp/conformance/` on first use, serves `test/conformance/fixtures.ts` on a
 * free loopback port with a SQLite ledger, and runs every server scenario of the
 * 2026-07-28 revision and the Tasks extension) and asserts that all of them passed.
 */
import { spawn } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SCENARIOS } from '../scripts/conformance.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const TEN_MINUTES = 600_000;

/**
 * Every server scenario the harness runs (`SCENARIOS` in scripts/conformance.ts, 50 of
 * @modelcontextprotocol/conformance 0.2.0-alpha.12): asserted here by name, so a scenario
 * dropped from the harness fails this test.
 */
const EXPECTED = [...SCENARIOS];

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
    `passes all ${EXPECTED.length} server scenarios (2026-07-28 and Tasks) against baton serve`,
    async () => {
      const { code, output } = await runHarness();
      const verdicts = new Map<string, string>();
      for (const match of output.matchAll(/^(PASS|FAIL) ([a-z0-9-]+) /gm)) {
        verdicts.set(match[2]!, match[1]!);
      }
      const report = `\n${output}`;
      expect([...verdicts.keys()].sort(), report).toEqual([...EXPECTED].sort());
      expect(
        [...verdicts].filter(([, verdict]) => verdict !== 'PASS').map(([scenario]) => scenario),
        report,
      ).toEqual([]);
      expect(output, report).toMatch(
        new RegExp(`^RESULT: ${EXPECTED.length}/${EXPECTED.length} scenarios passed, 0 failed`, 'm'),
      );
      expect(code, report).toBe(0);
    },
    TEN_MINUTES,
  );
});
