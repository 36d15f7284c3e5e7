/**
 * `bench-concurrency --mode user`: what a user of Baton would measure, the setup of the
 * independent harness issue 37 quotes, in one run of rotating slices. Servers, each its own
 * child process: the hand-written `deploy_production` on the bare SDK and an SDK "floor" (a
 * no-op tool), both served as the SDK's guide teaches (`serveGuided`: per-request server
 * factory, `createMcpHandler`, `toNodeHandler`, localhost Host/Origin guards); `baton serve
 * examples/approvals` without a ledger, with a SQLite ledger, and on PostgreSQL over 2
 * instances against 2 without a ledger. Clients: the official client answering each round
 * itself (`inputRequired: { autoFulfill: false }`, `deployAnswering`), 32 workers per side
 * and, for latency, 1 worker on the hand-written server and on Baton. It prints the five
 * ratios of the issue's table, each with its goal, and writes
 * `bench/reports/concurrency-user.json`. Baton runs from the built CLI (`--cli built`,
 * default: `packages/*\/dist-test`, built here first as the test suite's setup does) or from
 * its sources through tsx (`--cli sources`); the hand-written servers run through tsx either
 * way, and so does Baton's TypeScript flows module: each server process has tsx's loader.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { generateKey } from '@baton/engine';
import type { Client } from '@modelcontextprotocol/client';
import buildTestPackages from '../../test/setup/builtPackages.js';
import { batonNodeArgs, type CliFrom, cliFrom } from './batonCli.js';
import { benchPostgresOrSkip } from './benchPostgres.js';
import {
  BASELINE_FLAG,
  type Child,
  connect,
  connectAnswering,
  deployAnswering,
  deployOnce,
  FLOOR_FLAG,
  noopOnce,
  quantile,
  ROOT,
  round2,
  spawnServer,
  stop,
} from './benchServers.js';
import { cpuPerUnit, newSide, type Side, slice, warm } from './benchSlices.js';

/** One of the five ratios: its value, the goal (`<=` or `>=` a bound) and whether it is met. */
interface Ratio {
  readonly figure: string;
  readonly value: number;
  readonly goal: string;
  readonly met: boolean;
  readonly beside?: Record<string, number>;
}

const atMost = (figure: string, value: number, bound: number, beside?: Record<string, number>): Ratio => ({
  figure,
  value: round2(value),
  goal: `<= ${bound}`,
  met: value <= bound,
  ...(beside ? { beside } : {}),
});
const atLeast = (figure: string, value: number, bound: number, beside?: Record<string, number>): Ratio => ({
  figure,
  value: round2(value),
  goal: `>= ${bound}`,
  met: value >= bound,
  ...(beside ? { beside } : {}),
});

/** The `node` arguments and script of a Baton server: `[loader, args]` for `spawnServer`. */
function batonCommand(from: CliFrom, extra: string[]): [string[], string[]] {
  const node = batonNodeArgs(from);
  const script = node.at(-1)!;
  return [node.slice(0, -1), [script, 'serve', 'examples/approvals', '--http', '127.0.0.1:0', ...extra]];
}

/** Run the user mode; `self` is `bench-concurrency.ts` (which serves the baseline and the floor). */
export async function userMode(self: string): Promise<void> {
  const { values } = parseArgs({
    options: {
      mode: { type: 'string' },
      clients: { type: 'string', default: '32' },
      seconds: { type: 'string', default: '1.5' },
      rounds: { type: 'string', default: '10' },
      warmup: { type: 'string', default: '1000' },
      cli: { type: 'string', default: 'built' },
      client: { type: 'string', default: 'answering' },
      'no-postgres': { type: 'boolean' },
    },
  });
  const clients = Number(values.clients);
  const sliceMs = Number(values.seconds) * 1000;
  const rounds = Number(values.rounds);
  const warmup = Number(values.warmup);
  if (values.cli === 'built') {
    const began = performance.now();
    await buildTestPackages();
    console.log(`built packages/*/dist-test in ${Math.round(performance.now() - began)} ms`);
  }
  const from = cliFrom(values.cli);
  const withPostgres = !values['no-postgres'];
  // `auto`: the default mode's client (elicitation handlers, the SDK auto-fulfils), to compare the two.
  const auto = values.client === 'auto';
  if (!auto && values.client !== 'answering') throw new Error('--client answering|auto');
  const open = auto ? (url: URL) => connect(url, 'bench-concurrency') : (url: URL) => connectAnswering(url);
  const deploy = auto ? deployOnce : deployAnswering;

  const key = generateKey();
  const env = { BATON_KEYS: key };
  const dir = mkdtempSync(join(tmpdir(), 'baton-bench-concurrency-user-'));
  const pg = withPostgres ? benchPostgresOrSkip('concurrency-user') : undefined;
  const postmaster = pg?.postmaster;
  const servers: Child[] = [];
  const connected: Client[] = [];
  const loadBefore = loadavg();
  let counter = 0;
  const flow = (label: string) => (client: Client) => deploy(client, `1.${counter++}.0`, label);
  const noop = (label: string) => (client: Client) => noopOnce(client, label);
  /** `n` instances (the first alone: it may create the ledger's tables) and `workers` clients over them. */
  const side = async (
    name: string,
    command: [string[], string[]],
    n: number,
    workers: number,
    once: (label: string) => (client: Client) => Promise<void>,
  ): Promise<Side> => {
    const first = await spawnServer(command[1], env, command[0]);
    const rest = await Promise.all(Array.from({ length: n - 1 }, () => spawnServer(command[1], env, command[0])));
    const own = [first, ...rest];
    servers.push(...own);
    const made = newSide(name, own, [], once(name));
    for (let i = 0; i < workers; i++) made.clients.push(await open(own[i % n]!.url));
    connected.push(...made.clients);
    return made;
  };
  /** A 1-worker side on the servers of `of`. */
  const single = async (name: string, of: Side): Promise<Side> => {
    const client = await open(of.servers[0]!.url);
    connected.push(client);
    return newSide(name, of.servers, [client], flow(name));
  };
  const tsxSelf = (flag: string): [string[], string[]] => [
    ['--import', 'tsx'],
    [self, flag],
  ];

  try {
    const guide = await side('hand-written (SDK guide)', tsxSelf(BASELINE_FLAG), 1, clients, flow);
    const baton = await side('baton serve (no ledger)', batonCommand(from, []), 1, clients, flow);
    const floor = await side('SDK floor (noop)', tsxSelf(FLOOR_FLAG), 1, clients, noop);
    const sqliteUrl = `sqlite:${join(dir, 'ledger.db')}`;
    const sqlite = await side(
      'baton serve (sqlite ledger)',
      batonCommand(from, ['--ledger', sqliteUrl]),
      1,
      clients,
      flow,
    );
    const guide1 = await single('hand-written, c1', guide);
    const baton1 = await single('baton serve, c1', baton);
    const pgSides = pg
      ? [
          await side('baton serve x2 (no ledger)', batonCommand(from, []), 2, clients, flow),
          await side('baton serve x2 (postgres ledger)', batonCommand(from, ['--ledger', pg.url]), 2, clients, flow),
        ]
      : [];
    const loaded = [guide, baton, floor, sqlite, ...pgSides];
    const sides = [...loaded, guide1, baton1];

    // Warm-up (JIT, pools): the same number of units per instance for every loaded side, twice in rotation.
    for (let i = 0; i < 2; i++) for (const s of loaded) await warm(s, (warmup * s.servers.length) / 2);
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < sides.length; k++) await slice(sides[(r + k) % sides.length]!, sliceMs, postmaster);
    }

    const rate = (s: Side) => quantile(s.rates, 0.5);
    const rows = sides.map((s) => ({
      server: s.name,
      workers: s.clients.length,
      units: s.flows,
      perSecond: round2(rate(s)),
      slices: s.rates.map(Math.round).join(' '),
      cpuMsPerUnit: round2(cpuPerUnit(s)),
      driverCpuMsPerUnit: round2(s.driverMs / s.flows),
      ...(postmaster !== undefined ? { databaseCpuMsPerUnit: round2(s.databaseMs / s.flows) } : {}),
      p50Ms: round2(quantile(s.latencies, 0.5)),
      p99Ms: round2(quantile(s.latencies, 0.99)),
    }));
    console.table(rows);

    const median = (s: Side) => quantile(s.latencies, 0.5);
    const floorCpu = cpuPerUnit(floor);
    const ratios: Ratio[] = [
      atMost('c1 median ms per flow, Baton / hand-written', median(baton1) / median(guide1), 0.85),
      atLeast('c32 flows/s, Baton / hand-written', rate(baton) / rate(guide), 1.18, {
        serverCpuPerFlow: round2(cpuPerUnit(baton) / cpuPerUnit(guide)),
      }),
      atMost('SQLite ledger, no ledger / ledger flows/s (c32)', rate(baton) / rate(sqlite), 1.05),
      ...(pgSides.length === 2
        ? (() => {
            const [none, ledger] = pgSides as [Side, Side];
            return [
              atMost('PostgreSQL, 2 instances, no ledger / ledger flows/s (c32)', rate(none) / rate(ledger), 1.15, {
                batonCpuPerFlow: round2(cpuPerUnit(ledger) / cpuPerUnit(none)),
                withDatabase: round2(
                  (cpuPerUnit(ledger) + ledger.databaseMs / ledger.flows) /
                    (cpuPerUnit(none) + none.databaseMs / none.flows),
                ),
              }),
            ];
          })()
        : []),
      atMost('server CPU per tools/call leg, Baton / SDK floor', cpuPerUnit(baton) / 2 / floorCpu, 1.2, {
        batonMsPerLeg: round2(cpuPerUnit(baton) / 2),
        floorMsPerCall: round2(floorCpu),
        handWrittenPerLegVsFloor: round2(cpuPerUnit(guide) / 2 / floorCpu),
      }),
    ];
    for (const r of ratios) {
      const beside = r.beside
        ? ` (${Object.entries(r.beside)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ')})`
        : '';
      console.log(`${r.met ? 'met    ' : 'NOT met'}  ${r.figure}: ${r.value} (goal ${r.goal})${beside}`);
    }
    if (!pg) console.log('PostgreSQL skipped: ratio 4 not measured');

    mkdirSync(join(ROOT, 'bench/reports'), { recursive: true });
    writeFileSync(
      join(ROOT, `bench/reports/concurrency-user${auto ? '-auto' : ''}.json`),
      JSON.stringify(
        {
          command: `pnpm bench:concurrency ${process.argv.slice(2).join(' ')}`,
          node: process.version,
          date: new Date().toISOString(),
          machine: { cpus: cpus().length, loadAverage1mBefore: loadBefore[0], loadAverage1mAfter: loadavg()[0] },
          flow: auto
            ? 'deploy_production: 2 tools/call legs, the SDK client auto-fulfilling the round through elicitation/create handlers (--client auto); floor: one noop tools/call'
            : 'deploy_production: 2 tools/call legs, the client answering the round itself (autoFulfill: false, inputResponses + requestState); floor: one noop tools/call',
          client: values.client,
          baton:
            from === 'built'
              ? 'built CLI (packages/adapters/dist-test, tsx for the flows module)'
              : 'CLI sources through tsx',
          handWritten: 'scripts/bench-concurrency.ts through tsx (node --import tsx)',
          clients,
          sliceSeconds: sliceMs / 1000,
          rounds,
          warmupPerInstance: warmup,
          postgres: pg?.version ?? 'skipped',
          note: 'perSecond = median over slices (flows, or calls for the floor); cpuMsPerUnit = server processes user+system CPU (/proc) over all slices / units; driverCpuMsPerUnit = the driving process (all clients) likewise; databaseCpuMsPerUnit = PostgreSQL processes likewise; p50/p99 per unit',
          ratios,
          results: rows,
        },
        null,
        2,
      ),
    );
    console.log(`wrote bench/reports/concurrency-user${auto ? '-auto' : ''}.json`);
  } finally {
    await Promise.allSettled(connected.map((client) => client.close()));
    await Promise.allSettled(servers.map(stop));
    pg?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
