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
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { generateKey } from '@baton/engine';
import type { Client } from '@modelcontextprotocol/client';
import { localhostHostValidation, localhostOriginValidation, toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler } from '@modelcontextprotocol/server';
import { benchPostgres } from './lib/benchPostgres.js';
import {
  baselineFactory,
  type Child,
  CLI,
  connect,
  cpuTimes,
  deployOnce,
  listenBaseline,
  procStat,
  quantile,
  ROOT,
  round2,
  spawnServer,
  stop,
  ticksToMs,
} from './lib/benchServers.js';

const SELF = fileURLToPath(import.meta.url);
const BASELINE_FLAG = '--serve-baseline';

/** The baseline as the SDK's serving guide has it: createMcpHandler + toNodeHandler on node:http. */
async function serveBaseline(key: string): Promise<void> {
  const handler = createMcpHandler(baselineFactory(key));
  const handle = toNodeHandler(handler);
  const validateHost = localhostHostValidation();
  const validateOrigin = localhostOriginValidation();
  const server = createServer((req, res) => {
    if (!validateHost(req, res) || !validateOrigin(req, res)) return;
    void handle(req, res);
  });
  await listenBaseline(server, () => handler.close());
}

interface Side {
  readonly name: string;
  readonly servers: Child[];
  readonly clients: Client[];
  readonly rates: number[];
  readonly latencies: number[];
  flows: number;
  userMs: number;
  systemMs: number;
  /** CPU time of this (driving) process during the side's slices: the clients' share. */
  driverMs: number;
  /** CPU time of the PostgreSQL server's processes during the side's slices (0 without one). */
  databaseMs: number;
}

/** The PostgreSQL postmaster's pid, when the bench started the server itself. */
let postmaster: number | undefined;

/**
 * CPU time (ms) of a PostgreSQL server: its postmaster, its live children (backends, WAL
 * writer, checkpointer...) and the children it has reaped.
 */
function databaseCpuMs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  let ticks = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = procStat(entry);
    const self = Number(entry) === pid;
    if (!fields || (!self && Number(fields[1]) !== pid)) continue;
    // utime and stime, and for the postmaster also cutime and cstime (its reaped children).
    ticks += Number(fields[11]) + Number(fields[12]) + (self ? Number(fields[13]) + Number(fields[14]) : 0);
  }
  return ticksToMs(ticks);
}

let flowCounter = 0;

/** Warm-up: `count` complete flows spread over the side's clients, not measured. */
async function warm(side: Side, count: number): Promise<void> {
  let left = count;
  await Promise.all(
    side.clients.map(async (client) => {
      while (left-- > 0) await deployOnce(client, `0.${flowCounter++}.0`, side.name);
    }),
  );
}

/** One slice: every client of the side loops complete flows until `ms` have passed. */
async function slice(side: Side, ms: number): Promise<void> {
  const pids = side.servers.map((s) => s.child.pid!);
  const before = pids.map(cpuTimes);
  // Read before the driver's own CPU starts counting (the /proc walk is the driver's work).
  const database = databaseCpuMs(postmaster);
  const driver = process.cpuUsage();
  const start = performance.now();
  const end = start + ms;
  let flows = 0;
  await Promise.all(
    side.clients.map(async (client) => {
      while (performance.now() < end) {
        const began = performance.now();
        await deployOnce(client, `1.${flowCounter++}.0`, side.name);
        side.latencies.push(performance.now() - began);
        flows++;
      }
    }),
  );
  const elapsed = performance.now() - start;
  const driven = process.cpuUsage(driver);
  side.driverMs += (driven.user + driven.system) / 1000;
  side.databaseMs += databaseCpuMs(postmaster) - database;
  pids.map(cpuTimes).forEach((after, i) => {
    side.userMs += after.user - before[i]!.user;
    side.systemMs += after.system - before[i]!.system;
  });
  side.flows += flows;
  side.rates.push(flows / (elapsed / 1000));
}

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
    },
  });
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
      const side: Side = {
        name,
        servers,
        clients: [],
        rates: [],
        latencies: [],
        flows: 0,
        userMs: 0,
        systemMs: 0,
        driverMs: 0,
        databaseMs: 0,
      };
      sides.push(side);
      for (let i = 0; i < clients; i++)
        side.clients.push(await connect(servers[i % instances]!.url, 'bench-concurrency'));
    }

    // Warm-up (JIT, pools): the same number of flows for every side, twice over in rotation.
    for (let i = 0; i < 2; i++) for (const side of sides) await warm(side, warmup / 2);
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < sides.length; k++) await slice(sides[(r + k) % sides.length]!, sliceMs);
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
  await serveBaseline(process.env.BATON_KEYS!.split(',')[0]!);
} else {
  await main();
}
