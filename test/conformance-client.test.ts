/**
 * The official MCP conformance suite's client scenarios against `baton call`: runs
 * `scripts/conformance-client.ts` (the pinned suite on Node 22 from `.tmp/conformance`, which
 * `pnpm conformance` installs; each scenario's mock server and authorization server on loopback,
 * each scenario's `baton call` command lines as real CLI processes) and asserts that every
 * scenario of `CLIENT_SCENARIOS` passed, by name, and that the run's table is the client
 * section of the committed `docs/conformance.md`.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CLIENT_SCENARIOS, CLIENT_SECTION } from '../scripts/conformance-client.js';
import { CONFORMANCE_PAGE, readSection } from '../scripts/lib/conformanceSuite.js';
import { scratchDir } from './helpers/e2eLedgers.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const TEN_MINUTES = 600_000;

/** The 8 protocol scenarios and the 25 `auth/*` ones of 2026-07-28: a scenario dropped from the harness fails here. */
const EXPECTED = [...CLIENT_SCENARIOS];

function runHarness(table: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(
      join(ROOT, 'node_modules', '.bin', 'tsx'),
      ['scripts/conformance-client.ts', '--table', table],
      {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
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

const dir = scratchDir('conformance-client');

describe('official MCP conformance suite, client scenarios', () => {
  it(
    `passes all ${EXPECTED.length} client scenarios (2026-07-28, auth included) with baton call`,
    async () => {
      expect(EXPECTED).toHaveLength(33);
      const table = join(dir, 'conformance.md');
      const { code, output } = await runHarness(table);
      const verdicts = new Map<string, string>();
      for (const match of output.matchAll(/^(PASS|FAIL) ([a-z0-9_/-]+) /gm)) verdicts.set(match[2]!, match[1]!);
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
      expect(
        readSection(readFileSync(table, 'utf8'), CLIENT_SECTION),
        'docs/conformance.md is not the table of this run: pnpm conformance:docs',
      ).toBe(readSection(readFileSync(CONFORMANCE_PAGE, 'utf8'), CLIENT_SECTION));
    },
    TEN_MINUTES,
  );
});
