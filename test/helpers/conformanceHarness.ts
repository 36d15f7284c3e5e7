/**
 * Runs one of the conformance harnesses (`scripts/conformance.ts`, `scripts/conformance-client.ts`)
 * as the contributor would, through tsx from the repository root, and collects what it prints
 * (its `PASS|FAIL` lines and `RESULT:` line) with its exit code, and the assertions both
 * conformance test files make of a run.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { CONFORMANCE_PAGE, readSection } from '../../scripts/lib/conformanceSuite.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** `tsx <script> ...args`; resolves with the exit code and stdout+stderr. */
export function runHarness(script: string, args: readonly string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(join(ROOT, 'node_modules', '.bin', 'tsx'), [script, ...args], {
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

/** The verdict of each scenario the harness printed, by name. */
export function verdictsOf(output: string): Map<string, string> {
  const verdicts = new Map<string, string>();
  for (const match of output.matchAll(/^(PASS|FAIL) ([a-z0-9_/-]+) /gm)) verdicts.set(match[2]!, match[1]!);
  return verdicts;
}

/**
 * Assert that a harness run passed every one of `expected` and nothing else, that its `RESULT:`
 * line says so and that it exited 0; every failure message carries the run's whole output.
 */
export function expectEveryScenarioPassed(run: { code: number | null; output: string }, expected: readonly string[]) {
  const verdicts = verdictsOf(run.output);
  const report = `\n${run.output}`;
  expect([...verdicts.keys()].sort(), report).toEqual([...expected].sort());
  expect(
    [...verdicts].filter(([, verdict]) => verdict !== 'PASS').map(([scenario]) => scenario),
    report,
  ).toEqual([]);
  expect(run.output, report).toMatch(
    new RegExp(`^RESULT: ${expected.length}/${expected.length} scenarios passed, 0 failed`, 'm'),
  );
  expect(run.code, report).toBe(0);
}

/** Assert that `section` of the table a run wrote (`--table FILE`) is that of the committed docs/conformance.md. */
export function expectCommittedTable(table: string, section: string) {
  expect(
    readSection(readFileSync(table, 'utf8'), section),
    'docs/conformance.md is not the table of this run: pnpm conformance:docs',
  ).toBe(readSection(readFileSync(CONFORMANCE_PAGE, 'utf8'), section));
}
