/**
 * node-postgres (`pg`, the driver the PostgreSQL ledger uses) against
 * postgres.js (`postgres`, which pipelines queries on a connection) on the
 * statements a Baton round sends, not a test. `--callers` concurrent callers
 * (32) share one pool of `--connections` (10, the ledger's default) per
 * driver (for `pg`, the ledger's own pool from `connect.ts`) and loop one flow's writes as the ledger issues them when nothing
 * else is queued: the redemption insert (named, one jti in its arrays), then
 * the outcome update (unnamed), the SQL text imported from the store
 * (`REDEMPTION_STATEMENTS` of `redemptionBatches.ts`). `--mix combined` sends
 * instead what a busy ledger sends: the outcome of the previous flow and the
 * redemption of the next in one statement. The drivers run in alternating
 * slices of `--seconds` (`--rounds` each) on one throwaway PostgreSQL of
 * `scripts/pg.sh` with its default durability (`fsync` and
 * `synchronous_commit` on, printed); per driver: statements/s (median over
 * slices), this process's CPU per statement, PostgreSQL's CPU per statement
 * (all its processes, /proc), p50/p99 statement latency.
 *
 *   pnpm tsx scripts/bench-pg-drivers.ts
 *   pnpm tsx scripts/bench-pg-drivers.ts --callers 32 --connections 10 --rounds 4 --seconds 3 --mix combined
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { connectPostgres } from '../packages/store/src/node-postgres/connect.js';
import { REDEMPTION_STATEMENTS } from '../packages/store/src/node-postgres/redemptionBatches.js';
import { benchPostgres } from './lib/benchPostgres.js';
import { quantile, round2 } from './lib/benchServers.js';
import { databaseCpuMs } from './lib/benchSlices.js';

const { values: args } = parseArgs({
  options: {
    callers: { type: 'string', default: '32' },
    connections: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '4' },
    seconds: { type: 'string', default: '3' },
    mix: { type: 'string', default: 'single' },
  },
});
const CALLERS = Number(args.callers);
const CONNECTIONS = Number(args.connections);
const ROUNDS = Number(args.rounds);
const SLICE_MS = Number(args.seconds) * 1000;
const MIX = args.mix;
if (MIX !== 'single' && MIX !== 'combined') throw new Error('--mix single|combined');

const { INSERT, RECORD, RECORD_AND_INSERT } = REDEMPTION_STATEMENTS;
const DIGEST = 'd'.repeat(43);

/** One driver: how it sends a statement (named or not) and how it ends. */
interface Driver {
  readonly name: string;
  query(text: string, values: unknown[], name?: string): Promise<unknown>;
  end(): Promise<void>;
}

/** The ledger's own pool (`connect.ts`: same driver, same settings), which also migrates. */
async function nodePostgres(url: string): Promise<Driver> {
  const { pool, close } = await connectPostgres(
    { connectionString: url, maxConnections: CONNECTIONS },
    { what: 'bench', factory: 'bench-pg-drivers', defaultMaxConnections: CONNECTIONS, applicationName: 'baton-bench' },
  );
  return {
    name: 'pg (node-postgres)',
    query: (text, values, name) => pool.query(name === undefined ? { text, values } : { name, text, values }),
    end: close,
  };
}

function postgresJs(url: string): Driver {
  const sql = postgres(url, { max: CONNECTIONS, onnotice: () => {} });
  return {
    name: 'postgres (postgres.js)',
    query: (text, values, name) =>
      sql.unsafe(text, values as postgres.ParameterOrJSON<never>[], { prepare: name !== undefined }),
    end: () => sql.end({ timeout: 5 }),
  };
}

const insertValues = (jti: string, now: number) => [[jti], [DIGEST], [now + 600_000], [now], [null]];

/** One flow's writes as the ledger sends them (see the module comment); returns statements sent. */
async function flow(driver: Driver, previous: string | undefined, latencies: number[]): Promise<[string, number]> {
  const jti = randomBytes(16).toString('base64url');
  const now = Date.now();
  const timed = async (send: () => Promise<unknown>) => {
    const start = performance.now();
    await send();
    latencies.push(performance.now() - start);
  };
  if (MIX === 'single') {
    await timed(() => driver.query(INSERT.text, insertValues(jti, now), INSERT.name));
    await timed(() => driver.query(RECORD.text, [[jti], [`outcome of ${jti}`]]));
    return [jti, 2];
  }
  if (previous === undefined) {
    await timed(() => driver.query(INSERT.text, insertValues(jti, now), INSERT.name));
  } else {
    await timed(() =>
      driver.query(RECORD_AND_INSERT.text, [...insertValues(jti, now), [previous], [`outcome of ${previous}`]]),
    );
  }
  return [jti, 1];
}

interface Tally {
  statements: number;
  clientMs: number;
  databaseMs: number;
  ms: number;
  rates: number[];
  latencies: number[];
}

async function slice(driver: Driver, tally: Tally, postmaster: number | undefined): Promise<void> {
  const until = performance.now() + SLICE_MS;
  const cpu = process.cpuUsage();
  const database = databaseCpuMs(postmaster);
  const started = performance.now();
  let statements = 0;
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      let previous: string | undefined;
      while (performance.now() < until) {
        const [jti, sent] = await flow(driver, previous, tally.latencies);
        previous = jti;
        statements += sent;
      }
    }),
  );
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  tally.statements += statements;
  tally.clientMs += (used.user + used.system) / 1000;
  tally.databaseMs += databaseCpuMs(postmaster) - database;
  tally.ms += ms;
  tally.rates.push((statements * 1000) / ms);
}

async function main(): Promise<void> {
  const server = benchPostgres('drivers');
  try {
    const drivers = [await nodePostgres(server.url), postgresJs(server.url)];
    const settings: Record<string, string> = {};
    for (const name of ['fsync', 'synchronous_commit', 'server_version']) {
      const rows = (await drivers[0]!.query(`show ${name}`, [])) as { rows: Record<string, string>[] };
      settings[name] = rows.rows[0]![name]!;
    }
    console.log(
      `PostgreSQL ${settings.server_version}: fsync=${settings.fsync}, synchronous_commit=${settings.synchronous_commit}; ` +
        `${CALLERS} callers, ${CONNECTIONS} connections per driver, mix ${MIX}, ${ROUNDS} rounds of ${SLICE_MS} ms`,
    );
    const tallies = drivers.map(
      (): Tally => ({ statements: 0, clientMs: 0, databaseMs: 0, ms: 0, rates: [], latencies: [] }),
    );
    // Warm-up: connections open, statements prepared, JIT warm; not counted.
    for (const driver of drivers) {
      const scratch: Tally = { statements: 0, clientMs: 0, databaseMs: 0, ms: 0, rates: [], latencies: [] };
      await slice(driver, scratch, undefined);
    }
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? [0, 1] : [1, 0];
      for (const i of order) await slice(drivers[i]!, tallies[i]!, server.postmaster);
    }
    const rows = drivers.map((driver, i) => {
      const t = tallies[i]!;
      const sorted = [...t.latencies].sort((a, b) => a - b);
      return {
        driver: driver.name,
        statements: t.statements,
        statementsPerSecond: round2(
          quantile(
            [...t.rates].sort((a, b) => a - b),
            0.5,
          ),
        ),
        clientCpuMsPerStatement: round2(t.clientMs / t.statements),
        ...(server.postmaster !== undefined ? { databaseCpuMsPerStatement: round2(t.databaseMs / t.statements) } : {}),
        p50Ms: round2(quantile(sorted, 0.5)),
        p99Ms: round2(quantile(sorted, 0.99)),
      };
    });
    const base = rows[0]!;
    console.table(
      rows.map((row) => ({
        ...row,
        rateVsPg: round2(row.statementsPerSecond / base.statementsPerSecond),
        clientCpuVsPg: round2(row.clientCpuMsPerStatement / base.clientCpuMsPerStatement),
      })),
    );
    for (const driver of drivers) await driver.end();
  } finally {
    server.stop();
  }
}

await main();
