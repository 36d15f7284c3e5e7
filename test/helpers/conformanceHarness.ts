/**
 * Runs one of the conformance harnesses (`scripts/conformance.ts`, `scripts/conformance-client.ts`)
 * as the contributor would, through tsx from the repository root, and collects what it prints
 * (its `PASS|FAIL` lines and `RESULT:` line) with its exit code.
 */
import { spawn } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

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
