/**
 * The README's demo command, run to completion: two example servers on one
 * SQLite ledger; alice deploys, requests an expense (her call ends with the
 * waiting result), is refused her own decision, bob approves it from his
 * inbox on the other instance, alice's baton_resume sees it approved, and a
 * replayed state is rejected; a deploy of a commit waits for CI until `baton
 * send-event ci.finished` (signed) moves it on.
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
  expect(run.stdout).toMatch(
    /structuredContent \{"status":"waiting","id":"([\w-]{22})","waitingFor":\[\{"key":"manager_approval","role":"manager"\}\]\}/,
  );
  expect(run.stdout).toContain('a requester never decides their own request (four eyes)');
  expect(run.stdout).toMatch(
    /4\. bob on instance B[\s\S]*1 decision waits for you[\s\S]*result: Recorded manager_approval on request/,
  );
  expect(run.stdout).toMatch(/5\. alice on instance A: baton_resume \{ id \}\n {2}result: Expense of 800 approved\./);
  expect(run.stdout).toContain('rejected: JSON-RPC -32602 "Invalid or expired requestState" {"reason":"replayed"}');
  expect(run.stdout).toMatch(
    /7\. alice on instance A: deploy_production[\s\S]*Waiting for the event "ci\.finished"[\s\S]*answered: \{"delivered":1,[\s\S]*result: Deployed 2\.5\.0 to production \(change ticket CHG-2042\)\./,
  );
  expect(run.stdout).toContain('demo finished');
}, 120_000);
