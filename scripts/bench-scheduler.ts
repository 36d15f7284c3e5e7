/**
 * Scheduler benchmark (not a test), on SQLite and PostgreSQL: a ledger holding
 * `BENCH_SCHED_PARKED` (default 100,000) parked requests whose timers are spread
 * over the next day, plus real flow instances due at 1,000 per minute for
 * `BENCH_SCHED_SECONDS` (default 30) s. The scheduler (`createScheduler`, 1 s
 * poll) fires them; reported: firing lag p50 / p99 (fired minus due, ms) and
 * the process CPU per fired timer (user + system, ms). Then what the scheduler
 * costs serving throughput when nothing is due: rounds per second of a
 * one-round flow with the scheduler polling against without it, in
 * alternating 1 s slices. PostgreSQL is BATON_TEST_PG_URL or a throwaway
 * server from scripts/pg.sh. Writes bench/reports/scheduler.json.
 *
 *   pnpm exec tsx scripts/bench-scheduler.ts
 *   BENCH_ONLY=sqlite BENCH_SCHED_PARKED=20000 BENCH_SCHED_SECONDS=10 ...   a quicker run
 *   BENCH_SCHED_SLICES=60 ...   more serving slices (default 20): a tighter cost figure
 */
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
  createScheduler,
  decision,
  defineFlow,
  defineInputs,
  type FullLedger,
  form,
  generateKey,
} from '../packages/engine/src/index.js';
import { createSqliteLedger } from '../packages/store/src/better-sqlite3/index.js';
import { createPostgresLedger } from '../packages/store/src/node-postgres/index.js';
import { benchPostgresOrSkip } from './lib/benchPostgres.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const PARKED = Number(process.env.BENCH_SCHED_PARKED ?? 100_000);
const SECONDS = Number(process.env.BENCH_SCHED_SECONDS ?? 30);
/** Serving slices of 1 s, a multiple of 4 (ABBA). */
const SLICES = Math.max(4, Math.round(Number(process.env.BENCH_SCHED_SLICES ?? 20) / 4) * 4);
const only = new Set((process.env.BENCH_ONLY ?? 'sqlite,postgres').split(',').map((s) => s.trim()));
const PER_MINUTE = 1000;
const DAY = 24 * 3600 * 1000;

const inputs = defineInputs({
  approval: decision({ message: 'Approve?', schema: z.object({ ok: z.boolean() }), role: 'manager' }),
});
const timed = defineFlow({
  name: 'bench_timed',
  description: 'A decision that expires after ms.',
  args: z.object({ ms: z.number() }),
  inputs,
  machine: setup({
    types: { context: {} as { ms: number }, input: {} as { ms: number } },
    delays: { window: ({ context }) => context.ms },
  }).createMachine({
    id: 'bench_timed',
    context: ({ input }) => input,
    initial: 'waiting',
    states: {
      waiting: { meta: ask(inputs, 'approval'), after: { window: 'expired' } },
      expired: { type: 'final', output: () => 'expired' },
    },
  }),
});
const one = defineInputs({ ok: form({ message: 'OK?', schema: z.object({ ok: z.boolean() }) }) });
const oneRound = defineFlow({
  name: 'bench_one_round',
  description: 'Asks once.',
  args: z.object({}),
  inputs: one,
  machine: setup({}).createMachine({
    id: 'bench_one_round',
    initial: 'asking',
    states: { asking: { meta: ask(one, 'ok'), on: { 'input.ok': 'done' } }, done: { type: 'final' } },
  }),
});

const quantile = (sorted: number[], q: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

async function fill(ledger: FullLedger, n: number): Promise<number> {
  const started = Date.now();
  const now = Date.now();
  for (let i = 0; i < n; i += 500) {
    await Promise.all(
      Array.from({ length: Math.min(500, n - i) }, (_, j) =>
        ledger.requests.parkRequest(
          {
            id: `filler-${i + j}`,
            flow: 'bench_filler',
            requester: 'h',
            requesterName: null,
            status: 'waiting',
            waitingFor: [{ key: 'approval', role: 'manager' }],
            state: 'x'.repeat(300),
            now,
            expiresAt: now + 30 * DAY,
            // Spread over the next day, never due during the run.
            dueAt: now + 10 * 60_000 + Math.floor(Math.random() * DAY),
          },
          null,
        ),
      ),
    );
  }
  return Date.now() - started;
}

async function bench(name: string, ledger: FullLedger) {
  const fillMs = await fill(ledger, PARKED);
  console.log(`${name}: ${PARKED} parked requests with timers over a day, written in ${fillMs} ms`);
  const runner = createRunner({
    flows: [timed, oneRound],
    codec: createRequestStateCodec({ keys: [generateKey()] }),
    ledger,
    waitInCallSeconds: 0,
  });
  const context = { principal: 'alice', method: 'tools/call' as const, target: 'bench_timed' };
  const due = Math.round((SECONDS * PER_MINUTE) / 60);
  const lead = 3000;
  // Created now, due from `lead` on at 1,000 per minute.
  for (let i = 0; i < due; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, due - i) }, (_, j) =>
        runner.run({ flow: 'bench_timed', args: { ms: lead + ((i + j) * 60_000) / PER_MINUTE }, context }),
      ),
    );
  }
  const lags: number[] = [];
  let fired = 0;
  const cpu0 = cpuMs();
  const scheduler = createScheduler({
    runner,
    pollMs: 1000,
    onFire: (report) => {
      fired += report.fired;
      lags.push(...report.lagMs);
    },
  });
  const until = Date.now() + lead + SECONDS * 1000 + 5000;
  while (fired < due && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 200));
  await scheduler.stop();
  const cpu = cpuMs() - cpu0;
  lags.sort((a, b) => a - b);
  const firing = {
    due,
    fired,
    lagP50Ms: quantile(lags, 0.5),
    lagP99Ms: quantile(lags, 0.99),
    cpuMsPerFired: fired > 0 ? cpu / fired : 0,
  };
  console.log(
    `${name}: fired ${fired}/${due}; lag p50 ${firing.lagP50Ms} ms, p99 ${firing.lagP99Ms} ms; CPU ${firing.cpuMsPerFired.toFixed(2)} ms per fired timer`,
  );

  // Serving throughput with nothing due: alternating 1 s slices with and without the scheduler.
  const slices = { with: [] as number[], without: [] as number[] };
  const oneContext = { principal: 'bob', method: 'tools/call' as const, target: 'bench_one_round' };
  // Warm up first (JIT, caches): the first slice would otherwise count against whichever side it is.
  const warm = performance.now() + 2000;
  while (performance.now() < warm) {
    await Promise.all(
      Array.from({ length: 16 }, () => runner.run({ flow: 'bench_one_round', args: {}, context: oneContext })),
    );
  }
  // Each "without" slice is first or second of its pair (ABBA: with, first, second, with): the
  // two halves compared with each other are this run's noise (nothing differs between them).
  const halves = { first: [] as number[], second: [] as number[] };
  for (let s = 0; s < SLICES; s++) {
    // ABBA order, so a drift over the run counts against both sides alike.
    const on = [0, 3].includes(s % 4);
    const sched = on ? createScheduler({ runner, pollMs: 1000 }) : undefined;
    const end = performance.now() + 1000;
    let rounds = 0;
    while (performance.now() < end) {
      await Promise.all(
        Array.from({ length: 16 }, () => runner.run({ flow: 'bench_one_round', args: {}, context: oneContext })),
      );
      rounds += 16;
    }
    await sched?.stop();
    (on ? slices.with : slices.without).push(rounds);
    if (!on) (s % 4 === 1 ? halves.first : halves.second).push(rounds);
  }
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const cost = 1 - sum(slices.with) / sum(slices.without);
  const noise = Math.abs(1 - sum(halves.first) / sum(halves.second));
  console.log(
    `${name}: serving with the scheduler polling (nothing due) vs without: ${(cost * 100).toFixed(1)} % slower (negative: faster); this run's noise (without vs without) ±${(noise * 100).toFixed(1)} %`,
  );
  return { ledger: name, parked: PARKED, fillMs, firing, serving: { ...slices, cost, noise } };
}

const results: unknown[] = [];
const dir = mkdtempSync(join(tmpdir(), 'baton-bench-scheduler-'));
try {
  if (only.has('sqlite')) {
    const ledger = createSqliteLedger({ path: join(dir, 'ledger.db'), pruneIntervalMs: 0 });
    results.push(await bench('sqlite', ledger));
    await ledger.close();
  }
  if (only.has('postgres')) {
    const pg = benchPostgresOrSkip('scheduler');
    if (pg) {
      try {
        const ledger = await createPostgresLedger({ connectionString: pg.url, pruneIntervalMs: 0 });
        results.push(await bench('postgres', ledger));
        await ledger.close();
      } finally {
        pg.stop();
      }
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
mkdirSync(join(root, 'bench/reports'), { recursive: true });
writeFileSync(
  join(root, 'bench/reports/scheduler.json'),
  `${JSON.stringify({ at: new Date().toISOString(), results }, null, 2)}\n`,
);
