/**
 * Vitest global setup: a throwaway PostgreSQL server for the store's tests.
 * When BATON_TEST_PG_URL is set it is used as is; otherwise `scripts/pg.sh`
 * starts a cluster on a loopback port in a temporary folder (installing
 * Debian's `postgresql` when missing) and the teardown stops it and deletes
 * the folder, also when tests fail or the run is interrupted (a run killed
 * outright leaves its cluster to the next run, which stops it). The URL reaches
 * tests through `inject('batonPgUrl')`. If PostgreSQL cannot be started the
 * run fails when CI=true; locally the PostgreSQL tests are skipped with the
 * reason printed.
 */
import { execFile, spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** PostgreSQL URL for tests (empty when unavailable locally). */
    batonPgUrl: string;
    /** Why PostgreSQL tests are skipped (empty when they run). */
    batonPgSkipReason: string;
  }
}

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL('../../../../', import.meta.url));
const script = `${repoRoot}scripts/pg.sh`;

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  const given = process.env.BATON_TEST_PG_URL;
  if (given) {
    project.provide('batonPgUrl', given);
    project.provide('batonPgSkipReason', '');
    return undefined;
  }

  stopAbandonedClusters();
  const stateDir = `${repoRoot}.tmp/pg-vitest-${process.pid}`;
  const stop = () => spawnSync('bash', [script, 'stop', stateDir], { stdio: 'ignore', timeout: 60_000 });
  const onExit = () => stop();
  process.once('exit', onExit);

  try {
    // Commits need not wait for fsync in a throwaway cluster: same atomicity, much less time.
    const env = { ...process.env, BATON_PG_SERVER_OPTIONS: '-c synchronous_commit=off' };
    const { stdout } = await run('bash', [script, 'start', stateDir], { timeout: 15 * 60_000, env });
    const url = stdout.trim().split('\n').at(-1) ?? '';
    if (!/^postgres(ql)?:\/\//.test(url)) throw new Error(`scripts/pg.sh printed no URL: ${stdout}`);
    project.provide('batonPgUrl', url);
    project.provide('batonPgSkipReason', '');
  } catch (error) {
    stop();
    process.removeListener('exit', onExit);
    const detail = (error as { stderr?: string }).stderr?.trim() || String(error);
    const reason = `PostgreSQL could not be started by scripts/pg.sh: ${detail}`;
    if (process.env.CI === 'true' || process.env.CI === '1')
      throw new Error(`${reason} (CI=true: PostgreSQL tests must run)`);
    console.warn(`\n[baton/store] SKIPPING PostgreSQL tests locally. ${reason}\n`);
    project.provide('batonPgUrl', '');
    project.provide('batonPgSkipReason', reason);
    return undefined;
  }

  return async () => {
    await run('bash', [script, 'stop', stateDir], { timeout: 60_000 }).catch((error: unknown) => {
      console.warn('[baton/store] stopping the test PostgreSQL failed:', error);
    });
    process.removeListener('exit', onExit);
  };
}

/** Stop clusters left behind by runs that were killed before their teardown (their pid is gone). */
function stopAbandonedClusters(): void {
  let entries: string[] = [];
  try {
    entries = readdirSync(`${repoRoot}.tmp`);
  } catch {
    return;
  }
  for (const entry of entries) {
    const pid = Number(/^pg-vitest-(\d+)$/.exec(entry)?.[1]);
    if (!pid || isAlive(pid)) continue;
    spawnSync('bash', [script, 'stop', `${repoRoot}.tmp/${entry}`], { stdio: 'ignore', timeout: 60_000 });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
