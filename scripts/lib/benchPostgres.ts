/**
 * The PostgreSQL server of the benchmarks (`bench-ledger`, `bench-scheduler`,
 * `bench-concurrency`): `BATON_TEST_PG_URL` when set, else a throwaway cluster
 * of `scripts/pg.sh` under `.tmp/` (default durability settings), with the
 * function that stops it, the postmaster's pid (to read its CPU time) and a
 * version label for the report.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A benchmark's PostgreSQL. `postmaster` is set only for a server started here. */
export interface BenchPostgres {
  readonly url: string;
  readonly stop: () => void;
  readonly version: string;
  readonly postmaster?: number;
}

/**
 * Start (or reuse) PostgreSQL for benchmark `tag`.
 * @throws when the throwaway server cannot start (the caller decides whether to skip).
 */
export function benchPostgres(tag: string): BenchPostgres {
  if (process.env.BATON_TEST_PG_URL) {
    return { url: process.env.BATON_TEST_PG_URL, stop: () => {}, version: 'BATON_TEST_PG_URL' };
  }
  const state = join(ROOT, '.tmp', `pg-bench-${tag}-${process.pid}`);
  const stop = () => execFileSync('bash', [join(ROOT, 'scripts/pg.sh'), 'stop', state], { stdio: 'ignore' });
  try {
    const out = execFileSync('bash', [join(ROOT, 'scripts/pg.sh'), 'start', state], { encoding: 'utf8' }).trim();
    const datadir = readFileSync(join(state, 'datadir'), 'utf8').trim();
    const postmaster = Number(readFileSync(join(datadir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const version = `Debian PostgreSQL ${readdirSync('/usr/lib/postgresql').sort().at(-1)} (scripts/pg.sh)`;
    return { url: out.split('\n').at(-1)!, stop, version, postmaster };
  } catch (error) {
    stop();
    throw error;
  }
}

/** {@link benchPostgres}, or `undefined` with a warning when PostgreSQL cannot start here. */
export function benchPostgresOrSkip(tag: string): BenchPostgres | undefined {
  try {
    return benchPostgres(tag);
  } catch (error) {
    console.warn(`PostgreSQL unavailable, skipped: ${String(error)}`);
    return undefined;
  }
}
