/**
 * Ledger benchmark (not a test): redemptions per second for the memory
 * ledger, SQLite in one process, SQLite with four processes on one file, and
 * PostgreSQL (one process and four), each sequential (one redemption at a
 * time) and with 64 in flight. Every redemption is a fresh jti (the normal
 * case: a winning insert). PostgreSQL runs batched (the default: concurrent
 * redemptions share one statement and commit) and unbatched (`batching:
 * false`, one statement each), alternating in the same run, so the ratio
 * compares like with like. Every row reports redemption latency p50 and p99
 * (ms, from the call to its answer) beside the throughput. PostgreSQL comes from BATON_TEST_PG_URL, or a
 * throwaway server started with scripts/pg.sh and stopped at the end.
 * Prints a table and writes bench/reports/ledger.json.
 *
 *   pnpm exec tsx scripts/bench-ledger.ts
 *   BENCH_SCALE=0.2 ...   a quicker run;   BENCH_ONLY=sqlite,postgres ...   some ledgers only
 *   BENCH_PG_BATCHING=500:1,500:4 ...   also 4 × 64 with these maxBatch:maxInFlight, rotated with the default
 */
import { execFileSync, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FullLedger } from '@baton/engine';
import { createSqliteLedger } from '../packages/store/src/better-sqlite3/index.js';
import { createMemoryLedger } from '../packages/store/src/index.js';
import { createPostgresLedger } from '../packages/store/src/node-postgres/index.js';
import { benchPostgresOrSkip } from './lib/benchPostgres.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const scale = Number(process.env.BENCH_SCALE ?? 1);
const count = (n: number) => Math.max(100, Math.round(n * scale));
const DIGEST = randomBytes(32).toString('base64url');
const only = new Set((process.env.BENCH_ONLY ?? 'memory,sqlite,postgres').split(',').map((s) => s.trim()));

interface Row {
  ledger: string;
  processes: number;
  inFlight: number;
  redemptions: number;
  seconds: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
}

/** The `q` quantile (0..1) of `samples`, nearest rank. */
function quantile(samples: number[], q: number): number {
  const sorted = Float64Array.from(samples).sort();
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
}

/** Redeem `n` fresh jtis with `inFlight` lanes; returns elapsed seconds and each redemption's latency (ms). */
async function drive(
  ledger: FullLedger,
  n: number,
  inFlight: number,
): Promise<{ seconds: number; latencies: number[] }> {
  const latencies: number[] = [];
  const jtis = Array.from({ length: n }, () => randomBytes(16).toString('base64url'));
  const now = Date.now();
  let next = 0;
  const started = performance.now();
  const lane = async () => {
    while (next < n) {
      const jti = jtis[next++]!;
      const t0 = performance.now();
      const result = await ledger.redemptions.redeem({ jti, responsesDigest: DIGEST, expiresAt: now + 600_000, now });
      latencies.push(performance.now() - t0);
      if (result.status !== 'redeemed') throw new Error(`unexpected ${result.status} for a fresh jti`);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return { seconds: (performance.now() - started) / 1000, latencies };
}

function row(name: string, processes: number, inFlight: number, n: number, seconds: number, latencies: number[]): Row {
  return {
    ledger: name,
    processes,
    inFlight,
    redemptions: n,
    seconds,
    perSecond: n / seconds,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
  };
}

async function inProcess(name: string, open: () => Promise<FullLedger>, n: number, inFlight: number): Promise<Row> {
  const ledger = await open();
  await drive(ledger, Math.min(1000, n), inFlight); // warm-up: statements prepared, connections open
  const { seconds, latencies } = await drive(ledger, n, inFlight);
  await ledger.close();
  return row(name, 1, inFlight, n, seconds, latencies);
}

/** `batching` from BENCH_WORKER_BATCHING ("maxBatch:maxInFlight", set per worker), else the default. */
function batchingFromEnv(): { batching?: { maxBatch: number; maxInFlight: number } } {
  const spec = process.env.BENCH_WORKER_BATCHING;
  if (!spec) return {};
  const [maxBatch, maxInFlight] = spec.split(':').map(Number) as [number, number];
  return { batching: { maxBatch, maxInFlight } };
}

/** Fork `processes` copies of this script in worker mode and release them together. */
async function multiProcess(
  name: string,
  kind: 'sqlite' | 'postgres' | 'postgres-unbatched',
  location: string,
  processes: number,
  perProcess: number,
  inFlight: number,
  env: Record<string, string> = {},
): Promise<Row> {
  const children = Array.from({ length: processes }, () =>
    fork(fileURLToPath(import.meta.url), ['worker', kind, location, String(perProcess), String(inFlight)], {
      cwd: root,
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, ...env },
    }),
  );
  const message = (child: (typeof children)[number], type: string) =>
    new Promise<any>((resolve, reject) => {
      child.on('message', (m: any) => {
        if (m.type === 'error') reject(new Error(m.message));
        else if (m.type === type) resolve(m);
      });
      // 'close', not 'exit': a large last message may still be in the channel when the process exits.
      child.once('close', (code) => reject(new Error(`bench worker exited with ${code}`)));
    });
  await Promise.all(children.map((c) => message(c, 'ready')));
  const done = Promise.all(children.map((c) => message(c, 'done')));
  const startAt = Date.now() + 200;
  for (const child of children) child.send({ type: 'go', startAt });
  const reports: { finishedAt: number; latencies: number[] }[] = await done;
  const seconds = (Math.max(...reports.map((r) => r.finishedAt)) - startAt) / 1000;
  return row(
    name,
    processes,
    inFlight,
    perProcess * processes,
    seconds,
    reports.flatMap((r) => r.latencies),
  );
}

async function worker(kind: string, location: string, n: number, inFlight: number): Promise<void> {
  try {
    const ledger =
      kind === 'sqlite'
        ? createSqliteLedger({ path: location, pruneIntervalMs: 0 })
        : await createPostgresLedger({
            connectionString: location,
            pruneIntervalMs: 0,
            // Unbatched, each redemption holds a connection (40 each: 4 processes stay under the
            // server's 200); batched, a few suffice.
            maxConnections: kind === 'postgres' ? 10 : Math.min(inFlight, 40),
            ...(kind === 'postgres' ? batchingFromEnv() : { batching: false }),
          });
    await drive(ledger, Math.min(500, n), inFlight);
    process.send!({ type: 'ready' });
    process.once('message', async (m: { startAt: number }) => {
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, m.startAt - Date.now())));
      const { latencies } = await drive(ledger, n, inFlight);
      const finishedAt = Date.now();
      await ledger.close();
      // Disconnect only once the (large) message is out: disconnecting drops what is still queued.
      process.send!({ type: 'done', finishedAt, latencies }, () => process.disconnect());
    });
  } catch (error) {
    const message = String((error as Error)?.stack ?? error);
    console.error(`bench worker ${process.pid} (${kind}): ${message}`);
    // The parent may already be gone (another worker failed first): do not fail again on the channel.
    if (process.connected) {
      process.send!({ type: 'error', message });
      process.disconnect();
    }
  }
}

/** The server's fsync and synchronous_commit settings (the target needs both on), read with psql. */
function serverDurability(url: string): Record<string, string> {
  const psql = join('/usr/lib/postgresql', readdirSync('/usr/lib/postgresql').sort().at(-1)!, 'bin/psql');
  const out = execFileSync(
    psql,
    [
      url,
      '-At',
      '-F',
      '=',
      '-c',
      `select name, setting from pg_settings where name in ('fsync', 'synchronous_commit')`,
    ],
    {
      encoding: 'utf8',
    },
  );
  return Object.fromEntries(
    out
      .trim()
      .split('\n')
      .map((line) => line.split('=') as [string, string]),
  );
}

async function main(): Promise<void> {
  const loadBefore = loadavg();
  const rows: Row[] = [];
  const print = (row: Row) => {
    rows.push(row);
    console.log(
      `${row.ledger.padEnd(26)} ${String(row.processes).padStart(9)} ${String(row.inFlight).padStart(9)} ` +
        `${String(row.redemptions).padStart(11)} ${row.seconds.toFixed(2).padStart(8)} ${Math.round(row.perSecond).toLocaleString('en-US').padStart(14)}` +
        ` ${row.p50Ms.toFixed(2).padStart(8)} ${row.p99Ms.toFixed(2).padStart(8)}`,
    );
  };
  console.log(
    `${'ledger'.padEnd(26)} ${'processes'.padStart(9)} ${'in flight'.padStart(9)} ${'redemptions'.padStart(11)} ${'seconds'.padStart(8)} ${'redemptions/s'.padStart(14)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)}`,
  );

  if (only.has('memory')) {
    print(await inProcess('memory', async () => createMemoryLedger({ pruneIntervalMs: 0 }), count(200_000), 1));
    print(await inProcess('memory', async () => createMemoryLedger({ pruneIntervalMs: 0 }), count(200_000), 64));
  }

  if (only.has('sqlite')) {
    const dir = mkdtempSync(join(tmpdir(), 'baton-bench-'));
    let files = 0;
    const sqlite = async () => createSqliteLedger({ path: join(dir, `ledger-${++files}.db`), pruneIntervalMs: 0 });
    try {
      print(await inProcess('sqlite', sqlite, count(100_000), 1));
      print(await inProcess('sqlite', sqlite, count(100_000), 64));
      const shared = join(dir, 'shared.db');
      await createSqliteLedger({ path: shared, pruneIntervalMs: 0 }).close();
      print(await multiProcess('sqlite (one file)', 'sqlite', shared, 4, count(25_000), 1));
      print(await multiProcess('sqlite (one file)', 'sqlite', shared, 4, count(25_000), 64));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  const server = only.has('postgres') ? benchPostgresOrSkip('ledger') : undefined;
  let durability: Record<string, string> | undefined;
  if (server) {
    try {
      const batched = async () => createPostgresLedger({ connectionString: server.url, pruneIntervalMs: 0 });
      const unbatched = async () =>
        createPostgresLedger({ connectionString: server.url, pruneIntervalMs: 0, maxConnections: 64, batching: false });
      durability = serverDurability(server.url);
      console.log(
        `postgres durability: fsync=${durability.fsync}, synchronous_commit=${durability.synchronous_commit}`,
      );
      print(await inProcess('postgres', batched, count(5_000), 1));
      print(await inProcess('postgres unbatched', unbatched, count(5_000), 1));
      // Alternate batched and unbatched slices so that load from elsewhere hits both alike.
      const ratios: number[] = [];
      for (let slice = 0; slice < 2; slice++) {
        print(await inProcess('postgres unbatched', unbatched, count(20_000), 64));
        print(await inProcess('postgres', batched, count(40_000), 64));
        const before = await multiProcess('postgres unbatched', 'postgres-unbatched', server.url, 4, count(10_000), 64);
        print(before);
        const after = await multiProcess('postgres', 'postgres', server.url, 4, count(40_000), 64);
        print(after);
        ratios.push(after.perSecond / before.perSecond);
      }
      console.log(
        `postgres 4 processes × 64: batched / unbatched = ${ratios.map((r) => `${r.toFixed(2)}×`).join(', ')}`,
      );
      // Other batching limits, rotated with the default in the same run.
      const variants = (process.env.BENCH_PG_BATCHING ?? '').split(',').filter(Boolean);
      for (let slice = 0; slice < 2 && variants.length > 0; slice++) {
        for (const spec of ['500:2', ...variants]) {
          print(
            await multiProcess(`postgres ${spec}`, 'postgres', server.url, 4, count(40_000), 64, {
              BENCH_WORKER_BATCHING: spec,
            }),
          );
        }
      }
    } finally {
      server.stop();
    }
  }

  const postgresVersion = server?.version ?? 'skipped';
  const report = {
    generatedAt: new Date().toISOString(),
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      node: process.version,
      platform: process.platform,
      // Other work on the machine skews every figure: compare runs at similar load only.
      loadAverage1mBefore: loadBefore[0],
      loadAverage1mAfter: loadavg()[0],
    },
    postgres: postgresVersion,
    postgresDurability: durability,
    scale,
    notes:
      'Fresh jti per redemption (winning insert). SQLite: WAL, synchronous=NORMAL. PostgreSQL: the throwaway ' +
      'scripts/pg.sh server (default durability settings: fsync and synchronous_commit on) unless ' +
      'BATON_TEST_PG_URL was set. "postgres" is the default batched ledger, "postgres unbatched" batching: false. ' +
      'p50Ms/p99Ms: latency of one redemption, call to answer.',
    rows,
  };
  mkdirSync(join(root, 'bench/reports'), { recursive: true });
  writeFileSync(join(root, 'bench/reports/ledger.json'), `${JSON.stringify(report, null, 2)}\n`);
  console.log('\nwrote bench/reports/ledger.json');
}

if (process.argv[2] === 'worker') {
  const [, , , kind, location, n, inFlight] = process.argv;
  void worker(kind!, location!, Number(n), Number(inFlight));
} else {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
