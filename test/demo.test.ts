/**
 * The README's demo command, run to completion: it starts the example server
 * on SQLite, drives the SDK client through the deploy flow and the first
 * round of an expense (which waits for a manager), and shows a
 * replayed state rejected.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

it('runs the demo to completion with exit code 0', () => {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/demo.ts'], {
    cwd: root,
    encoding: 'utf8',
    timeout: 90_000,
  });
  expect(run.stderr).toBe('');
  expect(run.status).toBe(0);
  expect(run.stdout).toContain('Deployed 2.4.1 to production (change ticket CHG-2041).');
  expect(run.stdout).toContain('a manager, not the requester, decides');
  expect(run.stdout).toContain('rejected: JSON-RPC -32602 "Invalid or expired requestState" {"reason":"replayed"}');
  expect(run.stdout).toContain('demo finished');
}, 120_000);
