/**
 * Events benchmark (not a test), on SQLite and PostgreSQL: `BENCH_EVENTS_PARKED`
 * (default 10,000) real flow instances parked waiting for `bench.done`, each on
 * its own correlation key. Then two phases, each sending `BENCH_EVENTS_SENT`
 * (default 2,000) events, each to one waiting instance picked at random (the
 * phases take disjoint keys):
 * - `sequential`: one process, one send after another through `runner.sendEvent`
 *   (latency-bound; the figure issue 26 reported);
 * - `concurrent`: `BENCH_EVENTS_INSTANCES` (2) runner processes on the same
 *   database (or SQLite file), `BENCH_EVENTS_SENDERS` (32) senders in all, split
 *   over them, each sending through its process's `runner.sendEvent`. Started
 *   together (every process connected and warmed first); events/s over the
 *   wall time from the start to the last send's answer.
 * Latency is from the send to its answer (the send resolves once the instance's
 * next state is written): p50 / p99. Each phase then checks that nothing was
 * lost: delivered == sent, and every instance sent its event waits no more
 * (the (event, key) index holds none of them) while every other one still waits.
 * On PostgreSQL the round trips per event are counted (every `pg` client query
 * during the phase, over the events sent). Last, one event to
 * `BENCH_EVENTS_FANOUT` (default 500) instances waiting on one key.
 * PostgreSQL is BATON_TEST_PG_URL or a throwaway server from scripts/pg.sh.
 * `BENCH_EVENTS_CPU_PROF=<dir>`: a V8 CPU profile of each sending process.
 * Writes bench/reports/events.json.
 *
 *   pnpm exec tsx scripts/bench-events.ts
 *   BENCH_ONLY=sqlite BENCH_EVENTS_PARKED=2000 BENCH_EVENTS_SENT=500 ...   a quicker run
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
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
const SENDERS = Number(process.env.BENCH_EVENTS_SENDERS ?? 32);
const INSTANCES = Number(process.env.BENCH_EVENTS_INSTANCES ?? 2);
const only = new Set((process.env.BENCH_ONLY ?? 'sqlite,postgres').split(',').map((s) => s.trim()));

/**
 * Every query a `pg` client sends (pool queries and transactions alike): the round trips. The
 * store's own `pg` (the workspace root does not depend on it), so the count sees its queries.
 */
let roundTrips = 0;
const { Client } = createRequire(join(root, 'packages/store/package.json'))('pg') as {
  Client: { prototype: { query: (...args: unknown[]) => unknown } };
};
const query = Client.prototype.query;
Client.prototype.query = function (this: unknown, ...args: unknown[]) {
  roundTrips++;
  return query.apply(this, args);
};

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

/** Where a process finds the ledger: a SQLite file or a PostgreSQL URL. */
type Target = { readonly kind: 'sqlite'; readonly path: string } | { readonly kind: 'postgres'; readonly url: string };

async function open(target: Target): Promise<FullLedger> {
  return target.kind === 'sqlite'
    ? createSqliteLedger({ path: target.path, pruneIntervalMs: 0 })
    : createPostgresLedger({ connectionString: target.url, pruneIntervalMs: 0 });
}

function runnerOn(ledger: FullLedger, key: string) {
  return createRunner({
    flows: [waiting],
    codec: createRequestStateCodec({ keys: [key] }),
    ledger,
    waitInCallSeconds: 0,
    holdMs: 0,
  });
}

type Runner = ReturnType<typeof runnerOn>;

/** Send one event per key with `senders` concurrent senders: latencies, delivered count, wall ms. */
async function send(runner: Runner, keys: readonly string[], senders: number) {
  const latencies: number[] = [];
  let delivered = 0;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(senders, keys.length) }, async () => {
      while (next < keys.length) {
        const key = keys[next++]!;
        const t = performance.now();
        const sent = await runner.sendEvent('bench.done', { data: { key } });
        latencies.push(performance.now() - t);
        if (sent.status === 'delivered') delivered += sent.delivered;
      }
    }),
  );
  return { latencies, delivered, ms: performance.now() - started };
}

/** A child process of the concurrent phase: connect, warm up, say `ready`, send on `go`, print the result. */
async function child(config: { target: Target; key: string; keys: string[]; senders: number; warm: string[] }) {
  const ledger = await open(config.target);
  const runner = runnerOn(ledger, config.key);
  // Warm the connections and the code path on events no instance waits for.
  await send(runner, config.warm, config.senders);
  const lines = createInterface({ input: process.stdin });
  process.stdout.write('ready\n');
  for await (const line of lines) if (line.trim() === 'go') break;
  roundTrips = 0;
  const result = await send(runner, config.keys, config.senders);
  const trips = roundTrips;
  await ledger.close();
  process.stdout.write(`${JSON.stringify({ ...result, roundTrips: trips })}\n`);
  lines.close();
}

/** Start the concurrent phase's processes, release them together, gather what they measured. */
async function concurrent(target: Target, codecKey: string, keys: readonly string[]) {
  const per = Math.ceil(keys.length / INSTANCES);
  const children = Array.from({ length: INSTANCES }, (_, i) => {
    const senders = Math.floor(SENDERS / INSTANCES) + (i < SENDERS % INSTANCES ? 1 : 0);
    const config = {
      target,
      key: codecKey,
      keys: keys.slice(i * per, (i + 1) * per),
      senders,
      warm: Array.from({ length: 200 }, (_, j) => `warm${i}-${j}`),
    };
    const prof = process.env.BENCH_EVENTS_CPU_PROF;
    const args = [...(prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : []), '--import', 'tsx'];
    const proc = spawn(process.execPath, [...args, fileURLToPath(import.meta.url)], {
      cwd: root,
      env: { ...process.env, BENCH_EVENTS_CHILD: JSON.stringify(config) },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const lines = createInterface({ input: proc.stdout! });
    const iterator = lines[Symbol.asyncIterator]();
    const exited = new Promise<number | null>((resolve) => proc.on('exit', resolve));
    return { proc, iterator, exited };
  });
  const nextLine = async (c: (typeof children)[number]) => {
    const { value, done } = await c.iterator.next();
    if (done) throw new Error(`a bench process ended early (exit ${await c.exited})`);
    return value as string;
  };
  for (const c of children) {
    const line = await nextLine(c);
    if (line !== 'ready') throw new Error(`a bench process said ${line}`);
  }
  const started = performance.now();
  for (const c of children) c.proc.stdin!.write('go\n');
  const results = await Promise.all(
    children.map(async (c) => {
      const line = await nextLine(c);
      const ms = performance.now() - started;
      c.proc.stdin!.end();
      await c.exited;
      return { ...(JSON.parse(line) as { latencies: number[]; delivered: number; roundTrips: number }), ms };
    }),
  );
  return {
    latencies: results.flatMap((r) => r.latencies),
    delivered: results.reduce((n, r) => n + r.delivered, 0),
    roundTrips: results.reduce((n, r) => n + r.roundTrips, 0),
    ms: Math.max(...results.map((r) => r.ms)),
  };
}

/** Nothing lost: every key sent waits no more, every key not sent still waits. */
async function check(ledger: FullLedger, sent: readonly string[], unsent: readonly string[]) {
  let stillWaiting = 0;
  let moved = 0;
  const waits = async (key: string) =>
    (await ledger.events!.eventWaiters({ event: 'bench.done', match: key, limit: 2 })).length > 0;
  for (const key of sent) if (await waits(key)) stillWaiting++;
  for (const key of unsent.slice(0, 500)) if (!(await waits(key))) moved++;
  return { sentStillWaiting: stillWaiting, unsentMoved: moved };
}

function figures(
  phase: { latencies: number[]; delivered: number; ms: number; roundTrips: number },
  target: Target,
  lost: { sentStillWaiting: number; unsentMoved: number },
  extra: Record<string, number>,
) {
  const sorted = [...phase.latencies].sort((a, b) => a - b);
  return {
    ...extra,
    sent: phase.latencies.length,
    delivered: phase.delivered,
    ...lost,
    eventsPerSecond: Math.round(phase.latencies.length / (phase.ms / 1000)),
    p50Ms: +quantile(sorted, 0.5).toFixed(2),
    p99Ms: +quantile(sorted, 0.99).toFixed(2),
    ...(target.kind === 'postgres'
      ? { roundTripsPerEvent: +(phase.roundTrips / phase.latencies.length).toFixed(2) }
      : {}),
  };
}

async function bench(target: Target) {
  const codecKey = generateKey();
  const ledger = await open(target);
  const runner = runnerOn(ledger, codecKey);
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
  const seqKeys = keys.slice(0, SENT);
  const conKeys = keys.slice(SENT, 2 * SENT);
  const rest = keys.slice(2 * SENT);

  roundTrips = 0;
  const seq = await send(runner, seqKeys, 1);
  const seqTrips = roundTrips;
  const seqLost = await check(ledger, seqKeys, [...conKeys, ...rest]);

  const con = await concurrent(target, codecKey, conKeys);
  const conLost = await check(ledger, [...seqKeys, ...conKeys], rest);

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
  const report = {
    ledger: target.kind,
    parked: PARKED,
    parkSeconds: +(parkMs / 1000).toFixed(1),
    sequential: figures({ ...seq, roundTrips: seqTrips }, target, seqLost, { senders: 1, instances: 1 }),
    concurrent: figures(con, target, conLost, { senders: SENDERS, instances: INSTANCES }),
    fanout: { waiting: FANOUT, delivered: fan.status === 'delivered' ? fan.delivered : 0, ms: Math.round(fanMs) },
  };
  console.log(JSON.stringify(report));
  await ledger.close();
  return report;
}

async function main() {
  if (PARKED < 2 * SENT) throw new Error('BENCH_EVENTS_PARKED must be at least twice BENCH_EVENTS_SENT');
  const reports = [];
  const dir = mkdtempSync(join(tmpdir(), 'baton-bench-events-'));
  try {
    if (only.has('sqlite')) reports.push(await bench({ kind: 'sqlite', path: join(dir, 'events.db') }));
    if (only.has('postgres')) {
      let url = process.env.BATON_TEST_PG_URL;
      let stop = () => {};
      if (!url) {
        const out = execFileSync('bash', [join(root, 'scripts/pg.sh'), 'start', join(dir, 'pg')], { encoding: 'utf8' });
        url = out.trim().split('\n').at(-1)!;
        stop = () => execFileSync('bash', [join(root, 'scripts/pg.sh'), 'stop', join(dir, 'pg')]);
      }
      try {
        reports.push(await bench({ kind: 'postgres', url }));
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
}

if (process.env.BENCH_EVENTS_CHILD) await child(JSON.parse(process.env.BENCH_EVENTS_CHILD));
else await main();
