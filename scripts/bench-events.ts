/**
 * Events benchmark (not a test), on SQLite and PostgreSQL: `BENCH_EVENTS_PARKED`
 * (default 10,000) real flow instances parked waiting for `bench.done`, each on
 * its own correlation key, then `BENCH_EVENTS_SENT` (default 2,000) events sent
 * one after another through `runner.sendEvent`, each to one waiting instance
 * picked at random: events per second, and p50 / p99 latency from the send to
 * the instance's next state written (the send resolves once it is). Then one
 * event to `BENCH_EVENTS_FANOUT` (default 500) instances waiting on one key.
 * PostgreSQL is BATON_TEST_PG_URL or a throwaway server from scripts/pg.sh.
 * Writes bench/reports/events.json.
 *
 *   pnpm exec tsx scripts/bench-events.ts
 *   BENCH_ONLY=sqlite BENCH_EVENTS_PARKED=2000 BENCH_EVENTS_SENT=500 ...   a quicker run
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setup } from 'xstate';
import { z } from 'zod';
import {
  ask,
  createRequestStateCodec,
  createRunner,
  defineFlow,
  defineInputs,
  event,
  type FullLedger,
  generateKey,
  type InputEvents,
} from '../packages/engine/src/index.js';
import { createSqliteLedger } from '../packages/store/src/better-sqlite3/index.js';
import { createPostgresLedger } from '../packages/store/src/node-postgres/index.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const PARKED = Number(process.env.BENCH_EVENTS_PARKED ?? 10_000);
const SENT = Number(process.env.BENCH_EVENTS_SENT ?? 2000);
const FANOUT = Number(process.env.BENCH_EVENTS_FANOUT ?? 500);
const only = new Set((process.env.BENCH_ONLY ?? 'sqlite,postgres').split(',').map((s) => s.trim()));

const done = event({
  name: 'bench.done',
  schema: z.object({ key: z.string() }),
  match: ({ context }: { context: { key: string } }) => context.key,
  key: ({ data }) => data.key,
});
const inputs = defineInputs({ done });
const waiting = defineFlow({
  name: 'bench_wait',
  description: 'Waits for bench.done of its key.',
  args: z.object({ key: z.string() }),
  inputs,
  machine: setup({
    types: { context: {} as { key: string }, input: {} as { key: string }, events: {} as InputEvents<typeof inputs> },
  }).createMachine({
    id: 'bench_wait',
    context: ({ input }) => input,
    initial: 'waiting',
    states: {
      waiting: { meta: ask(inputs, 'done'), on: { 'input.done': 'done' } },
      done: { type: 'final', output: () => 'done' },
    },
  }),
});

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

async function bench(name: string, ledger: FullLedger) {
  const runner = createRunner({
    flows: [waiting],
    codec: createRequestStateCodec({ keys: [generateKey()] }),
    ledger,
    waitInCallSeconds: 0,
    holdMs: 0,
  });
  const context = { principal: 'bench', method: 'tools/call' as const, target: 'bench_wait' };
  const started = performance.now();
  for (let i = 0; i < PARKED; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, PARKED - i) }, (_, j) =>
        runner.run({ flow: 'bench_wait', args: { key: `k${i + j}` }, context }),
      ),
    );
  }
  const parkMs = performance.now() - started;
  const keys = Array.from({ length: PARKED }, (_, i) => `k${i}`);
  for (let i = keys.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [keys[i], keys[j]] = [keys[j]!, keys[i]!];
  }
  const latencies: number[] = [];
  let delivered = 0;
  const sendStart = performance.now();
  for (const key of keys.slice(0, SENT)) {
    const t = performance.now();
    const sent = await runner.sendEvent('bench.done', { data: { key } });
    latencies.push(performance.now() - t);
    if (sent.status === 'delivered') delivered += sent.delivered;
  }
  const sendMs = performance.now() - sendStart;
  for (let i = 0; i < FANOUT; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, FANOUT - i) }, () =>
        runner.run({ flow: 'bench_wait', args: { key: 'fan' }, context }),
      ),
    );
  }
  const fanStart = performance.now();
  const fan = await runner.sendEvent('bench.done', { data: { key: 'fan' } });
  const fanMs = performance.now() - fanStart;
  latencies.sort((a, b) => a - b);
  const report = {
    ledger: name,
    parked: PARKED,
    parkSeconds: +(parkMs / 1000).toFixed(1),
    sent: SENT,
    delivered,
    eventsPerSecond: Math.round(SENT / (sendMs / 1000)),
    p50Ms: +quantile(latencies, 0.5).toFixed(2),
    p99Ms: +quantile(latencies, 0.99).toFixed(2),
    fanout: { waiting: FANOUT, delivered: fan.status === 'delivered' ? fan.delivered : 0, ms: Math.round(fanMs) },
  };
  console.log(JSON.stringify(report));
  await ledger.close();
  return report;
}

const reports = [];
const dir = mkdtempSync(join(tmpdir(), 'baton-bench-events-'));
try {
  if (only.has('sqlite')) {
    reports.push(await bench('sqlite', createSqliteLedger({ path: join(dir, 'events.db'), pruneIntervalMs: 0 })));
  }
  if (only.has('postgres')) {
    let url = process.env.BATON_TEST_PG_URL;
    let stop = () => {};
    if (!url) {
      const out = execFileSync('bash', [join(root, 'scripts/pg.sh'), 'start', join(dir, 'pg')], { encoding: 'utf8' });
      url = out.trim().split('\n').at(-1)!;
      stop = () => execFileSync('bash', [join(root, 'scripts/pg.sh'), 'stop', join(dir, 'pg')]);
    }
    try {
      reports.push(await bench('postgres', await createPostgresLedger({ connectionString: url, pruneIntervalMs: 0 })));
    } finally {
      stop();
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
mkdirSync(join(root, 'bench/reports'), { recursive: true });
writeFileSync(
  join(root, 'bench/reports/events.json'),
  `${JSON.stringify({ at: new Date().toISOString(), reports }, null, 2)}\n`,
);
