/**
 * Throughput under concurrency (not a test), loopback only: `deploy_production`
 * completed by many concurrent official SDK clients against
 *
 * - the hand-written baseline on the bare SDK (`lib/benchServers.ts`), served the
 *   way the SDK's serving guide teaches: `createMcpHandler` behind `toNodeHandler`
 *   from `@modelcontextprotocol/node`, with its localhost Host/Origin guards;
 * - `baton serve examples/approvals` without a ledger;
 * - and, with `--ledger`, `baton serve` on that ledger (every instance on one database).
 *
 * Each side runs `--instances` server processes; the `--clients` clients of a side
 * are spread over its instances and each loops complete flows (two `tools/call`
 * legs and two elicitations). The sides run in rotating slices of `--seconds`
 * (each side first in turn, `--rounds` rounds) so drift on the shared machine
 * hits all alike. Per side: the median flows/s over its slices, the server CPU
 * per flow (user + system time of its server processes from /proc, summed over
 * its slices, divided by the flows completed), latency p50/p99, and ratios to
 * the first side. Writes bench/reports/concurrency[-<ledger>-<instances>x].json.
 *
 *   pnpm tsx scripts/bench-concurrency.ts                       # 32 clients, 1 instance each, baseline vs baton
 *   pnpm tsx scripts/bench-concurrency.ts --instances 3 --clients 64 --ledger postgres
 *
 * Options: --clients N (32), --instances N (1), --ledger none|postgres|sqlite|memory (none; memory:
 * one ledger per instance, no database: Baton's own cost of having a ledger),
 * --seconds S per slice (1.5), --rounds N (10), --warmup N flows per side first (1000 per instance), --baseline / --no-baseline (default: with the
 * baseline when there is no ledger). PostgreSQL comes from BATON_TEST_PG_URL or a throwaway
 * server of scripts/pg.sh (default durability), stopped at the end.
 * `BENCH_HTTP_CPU_PROF=<dir>`: every server writes a V8 CPU profile there when it stops.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { generateKey } from '@baton/engine';
import { benchPostgres } from './lib/benchPostgres.js';
import {
  BASELINE_FLAG,
  baselineFactory,
  CLI,
  connect,
  deployOnce,
  FLOOR_FLAG,
  floorFactory,
  quantile,
  ROOT,
  round2,
  serveGuided,
  spawnServer,
  stop,
} from './lib/benchServers.js';
import { newSide, type Side, slice, warm } from './lib/benchSlices.js';
import { userMode } from './lib/benchUserMode.js';

const SELF = fileURLToPath(import.meta.url);

/** The PostgreSQL postmaster's pid, when the bench started the server itself. */
let postmaster: number | undefined;
let flowCounter = 0;

async function main() {
  const { values } = parseArgs({
    options: {
      clients: { type: 'string', default: '32' },
      instances: { type: 'string', default: '1' },
      ledger: { type: 'string', default: 'none' },
      seconds: { type: 'string', default: '1.5' },
      rounds: { type: 'string', default: '10' },
      warmup: { type: 'string' },
      baseline: { type: 'boolean' },
      'no-baseline': { type: 'boolean' },
      mode: { type: 'string', default: 'default' },
    },
  });
  if (values.mode !== 'default') throw new Error('--mode default|user');
  const clients = Number(values.clients);
  const instances = Number(values.instances);
  const sliceMs = Number(values.seconds) * 1000;
  const rounds = Number(values.rounds);
  // Every instance warms (JIT, pools) on 1000 flows unless told otherwise: with fewer, 3 instances
  // were still speeding up during the first measured slices.
  const warmup = values.warmup !== undefined ? Number(values.warmup) : 1000 * instances;
  const ledgerKind = values.ledger!;
  if (!['none', 'postgres', 'sqlite', 'memory'].includes(ledgerKind))
    throw new Error('--ledger none|postgres|sqlite|memory');
  const withBaseline = values['no-baseline'] ? false : (values.baseline ?? ledgerKind === 'none');

  const key = generateKey();
  const env = { BATON_KEYS: key };
  const dir = mkdtempSync(join(tmpdir(), 'baton-bench-concurrency-'));
  const pg = ledgerKind === 'postgres' ? benchPostgres('concurrency') : undefined;
  postmaster = pg?.postmaster;
  const ledgerUrl = pg
    ? pg.url
    : ledgerKind === 'sqlite'
      ? `sqlite:${join(dir, 'ledger.db')}`
      : ledgerKind === 'memory'
        ? 'memory:'
        : undefined;
  const sides: Side[] = [];
  const loadBefore = loadavg();
  try {
    const baton = (extra: string[]) => [CLI, 'serve', 'examples/approvals', '--http', '127.0.0.1:0', ...extra];
    const plan: [string, string[]][] = [
      ...(withBaseline ? [['baseline (SDK guide: createMcpHandler + toNodeHandler)', [SELF, BASELINE_FLAG]]] : []),
      ['baton serve (no ledger)', baton([])],
      ...(ledgerUrl ? [[`baton serve (${ledgerKind} ledger)`, baton(['--ledger', ledgerUrl])]] : []),
    ] as [string, string[]][];
    for (const [name, args] of plan) {
      // One instance first (it may create the ledger's tables), then the rest together.
      const first = await spawnServer(args, env);
      const rest = await Promise.all(Array.from({ length: instances - 1 }, () => spawnServer(args, env)));
      const servers = [first, ...rest];
      const side = newSide(name, servers, [], (client) => deployOnce(client, `1.${flowCounter++}.0`, name));
      sides.push(side);
      for (let i = 0; i < clients; i++)
        side.clients.push(await connect(servers[i % instances]!.url, 'bench-concurrency'));
    }

    // Warm-up (JIT, pools): the same number of flows for every side, twice over in rotation.
    for (let i = 0; i < 2; i++) for (const side of sides) await warm(side, warmup / 2);
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < sides.length; k++) await slice(sides[(r + k) % sides.length]!, sliceMs, postmaster);
    }

    const ref = sides[0]!;
    const refRate = quantile(ref.rates, 0.5);
    const refCpu = (ref.userMs + ref.systemMs) / ref.flows;
    const results = sides.map((side) => {
      const rate = quantile(side.rates, 0.5);
      const cpu = (side.userMs + side.systemMs) / side.flows;
      return {
        server: side.name,
        flows: side.flows,
        flowsPerSecond: round2(rate),
        slices: side.rates.map(Math.round).join(' '),
        cpuMsPerFlow: round2(cpu),
        userMsPerFlow: round2(side.userMs / side.flows),
        systemMsPerFlow: round2(side.systemMs / side.flows),
        driverCpuMsPerFlow: round2(side.driverMs / side.flows),
        ...(postmaster !== undefined ? { databaseCpuMsPerFlow: round2(side.databaseMs / side.flows) } : {}),
        p50Ms: round2(quantile(side.latencies, 0.5)),
        p99Ms: round2(quantile(side.latencies, 0.99)),
        rateVsFirst: round2(rate / refRate),
        cpuVsFirst: round2(cpu / refCpu),
      };
    });
    console.table(results);
    const name = ledgerKind === 'none' && instances === 1 ? 'concurrency' : `concurrency-${ledgerKind}-${instances}x`;
    mkdirSync(join(ROOT, 'bench/reports'), { recursive: true });
    writeFileSync(
      join(ROOT, `bench/reports/${name}.json`),
      JSON.stringify(
        {
          node: process.version,
          date: new Date().toISOString(),
          machine: { cpus: cpus().length, loadAverage1mBefore: loadBefore[0], loadAverage1mAfter: loadavg()[0] },
          flow: 'deploy_production (2 tools/call legs + 2 elicitations, auto-driving SDK client)',
          clients,
          instances,
          ledger: ledgerKind,
          postgres: pg?.version,
          sliceSeconds: sliceMs / 1000,
          rounds,
          note: 'flowsPerSecond = median over slices; cpuMsPerFlow = server processes user+system CPU (/proc) over all slices / flows; driverCpuMsPerFlow = the driving process (all clients) likewise; databaseCpuMsPerFlow = the PostgreSQL server processes likewise (when the bench started it); ratios vs the first row',
          results,
        },
        null,
        2,
      ),
    );
    console.log(`wrote bench/reports/${name}.json`);
  } finally {
    await Promise.allSettled(sides.flatMap((side) => side.clients.map((client) => client.close())));
    await Promise.allSettled(sides.flatMap((side) => side.servers.map(stop)));
    pg?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv.includes(BASELINE_FLAG)) {
  await serveGuided(baselineFactory(process.env.BATON_KEYS!.split(',')[0]!));
} else if (process.argv.includes(FLOOR_FLAG)) {
  await serveGuided(floorFactory());
} else if (process.argv.includes('--mode=user') || process.argv[process.argv.indexOf('--mode') + 1] === 'user') {
  await userMode(SELF);
} else {
  await main();
}
