/**
 * Faults under load, with real processes (bounded, loopback only): three
 * `baton serve test/fixtures/fault-flows --ledger postgres://...` instances
 * and two dozen official-SDK clients over HTTP, every round of a client going
 * to the next instance (any instance serves any round).
 *
 * - PostgreSQL restarted mid-load (`pg_ctl restart`), then stopped for a
 *   while and started again, on a cluster of this test's own (the suite's
 *   shared server is never restarted): rounds that reach the ledger while it
 *   is down get JSON-RPC -32000 `ledger_unavailable` with a retry hint, never
 *   -32603; the instances recover without a restart; every client finishes.
 *   Exactly-once: each acknowledged final round, sent again, answers the
 *   same receipt (recorded, not run again), and no two flows share one.
 * - One instance SIGKILLed mid-load (on the suite's server): every client
 *   finishes on the other two.
 *
 * - A durable step running when the database stops (`stamp_receipt`): the
 *   round is -32000 `ledger_unavailable`, not the flow's "failed" branch; the
 *   retry of the same state, on another instance, completes with the step's
 *   outcome, and the step ran once.
 *
 * A client retries a round refused with -32000 (after `retryAfterMs`) or lost
 * with its instance, with the same requestState. Such a round was never
 * acknowledged; a round cut short by the ledger releases its redemption, but
 * if the connection broke after the redemption committed and before the
 * server heard so (or the instance died), the retry is the retryable -32000
 * `in_progress` until the redemption counts as abandoned (older than its
 * round can run), then `replayed`, and the client starts that flow again. Nothing here asserts a duration.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { generateKey } from '@baton/engine';
import { type Client, ProtocolError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createTestDatabase } from '../packages/store/test/helpers/postgres.js';
import {
  expectInputRequired,
  newClient,
  protocolError,
  ROOT,
  type ServeProcess,
  sleep,
  startServe,
  textOf,
  toolRound,
} from './helpers/mcpClients.js';

const run = promisify(execFile);
const pgUrl = inject('batonPgUrl');
const describeWithPg = pgUrl ? describe : describe.skip;

const INSTANCES = 3;
const CLIENTS = 24;
const FLOWS_PER_CLIENT = 4;
const LEDGER_UNAVAILABLE = {
  code: -32000,
  message: 'Ledger unavailable, retry later',
  data: { reason: 'ledger_unavailable', retryAfterMs: 1000 },
};

const IN_PROGRESS = {
  code: -32000,
  message: 'Round still in progress, retry the same request later',
  data: { reason: 'in_progress', retryAfterMs: 1000 },
};

const servers: ServeProcess[] = [];
const clients: Client[] = [];
const cleanups: (() => Promise<unknown>)[] = [];

afterAll(async () => {
  await Promise.allSettled(clients.splice(0).map((client) => client.close()));
  await Promise.allSettled(servers.splice(0).map((server) => server.stop()));
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

async function startInstances(ledgerUrl: string, extraEnv: Record<string, string> = {}): Promise<ServeProcess[]> {
  const env = { BATON_KEYS: generateKey(), ...extraEnv };
  const args = ['test/fixtures/fault-flows', '--http', '127.0.0.1:0', '--ledger', ledgerUrl];
  const started = await Promise.all(Array.from({ length: INSTANCES }, () => startServe(args, env)));
  servers.push(...started);
  return started;
}

/** What the load saw: errors by kind, acknowledged final rounds, flows started over. */
interface Tally {
  unavailable: number;
  failedFetches: number;
  lostWithInstance: number;
  inProgress: number;
  replayedAfterFailure: number;
  startedOver: number;
  unexpected: string[];
  finals: { params: Parameters<typeof toolRound>[1]; text: string }[];
}

const newTally = (): Tally => ({
  unavailable: 0,
  failedFetches: 0,
  lostWithInstance: 0,
  inProgress: 0,
  replayedAfterFailure: 0,
  startedOver: 0,
  unexpected: [],
  finals: [],
});

/**
 * A client whose every request goes to the next live instance, starting at `first`.
 * `dead` holds instances the test killed: they are skipped from then on. `sent` hears of
 * every request just after it was handed to fetch, with the instance it went to.
 */
async function rotatingClient(
  instances: readonly ServeProcess[],
  first: number,
  dead: Set<number>,
  tally?: Tally,
  sent?: (index: number) => void,
): Promise<Client> {
  let next = first;
  const fetchFn = async (_input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    let index = next++ % instances.length;
    for (let i = 0; dead.has(index) && i < instances.length; i++) index = next++ % instances.length;
    try {
      const response = fetch(instances[index]!.url, init);
      sent?.(index);
      return await response;
    } catch (error) {
      if (tally) tally.failedFetches++;
      throw error;
    }
  };
  const { client } = newClient({ capabilities: { elicitation: { form: {} } } });
  clients.push(client);
  await client.connect(new StreamableHTTPClientTransport(instances[first]!.url, { fetch: fetchFn }));
  return client;
}

/**
 * One round, retried with the same params while the ledger is unavailable or the instance
 * was lost. Returns the result, or 'replayed' when a retry after such a failure was refused as
 * replayed (the lost attempt had redeemed the state: the flow must start over).
 */
async function resilientRound(client: Client, params: Parameters<typeof toolRound>[1], tally: Tally) {
  let failedBefore = false;
  for (let attempt = 0; attempt < 60; attempt++) {
    try {
      return await toolRound(client, params);
    } catch (error) {
      if (error instanceof ProtocolError) {
        const seen = { code: error.code, message: error.message, data: error.data };
        if (error.code === IN_PROGRESS.code && (error.data as { reason?: string })?.reason === 'in_progress') {
          // The lost attempt redeemed the state and its round did not finish (its instance died, or
          // the connection broke after the redemption committed): retryable until it is abandoned.
          expect(seen).toEqual(IN_PROGRESS);
          tally.inProgress++;
          failedBefore = true;
          await sleep(IN_PROGRESS.data.retryAfterMs);
          continue;
        }
        if (error.code === LEDGER_UNAVAILABLE.code) {
          expect(seen).toEqual(LEDGER_UNAVAILABLE);
          tally.unavailable++;
          failedBefore = true;
          await sleep((error.data as { retryAfterMs: number }).retryAfterMs);
          continue;
        }
        if (failedBefore && error.code === -32602 && (error.data as { reason?: string })?.reason === 'replayed') {
          tally.replayedAfterFailure++;
          return 'replayed' as const;
        }
        tally.unexpected.push(JSON.stringify(seen));
        throw error;
      }
      // The instance went away mid-request (SIGKILL): the next attempt goes to another one.
      tally.lostWithInstance++;
      failedBefore = true;
      await sleep(200);
    }
  }
  throw new Error(`round did not succeed after 60 attempts: ${JSON.stringify(params.name)}`);
}

/** Run `FLOWS_PER_CLIENT` receipts to completion on `client`. */
async function clientLoad(client: Client, c: number, tally: Tally, progress: () => void): Promise<void> {
  for (let f = 0; f < FLOWS_PER_CLIENT; ) {
    const call = { name: 'issue_receipt', arguments: { item: `item-${c}-${f}` } };
    const first = await resilientRound(client, call, tally);
    if (first === 'replayed') throw new Error('a first round never redeems');
    const params = {
      ...call,
      requestState: expectInputRequired(first).requestState,
      inputResponses: { confirm: { action: 'accept', content: { confirm: true } } },
    };
    const done = await resilientRound(client, params, tally);
    if (done === 'replayed') {
      tally.startedOver++;
      continue;
    }
    const text = textOf(done as { content?: unknown });
    expect(text).toMatch(new RegExp(`^Receipt R-[0-9a-f-]{36} for item-${c}-${f}$`));
    tally.finals.push({ params, text });
    f++;
    progress();
  }
}

/** Resolves once `count()` reaches `target` (polled), or rejects when `load` fails first. */
async function until(count: () => number, target: number, load: Promise<unknown>): Promise<void> {
  let failed = false;
  const watch = load.catch(() => {
    failed = true;
  });
  while (count() < target && !failed) await sleep(50);
  if (failed) await load; // rethrows the load's error
  void watch;
}

/** Every acknowledged final round again, on the next instances: the same receipt, not a new one. */
async function expectRecordedOutcomes(client: Client, tally: Tally): Promise<void> {
  const receipts = tally.finals.map((final) => final.text.split(' ')[1]);
  expect(new Set(receipts).size).toBe(tally.finals.length);
  for (const final of tally.finals) {
    const again = await toolRound(client, final.params);
    expect(textOf(again as { content?: unknown })).toBe(final.text);
  }
}

/** A PostgreSQL cluster of this test's own (scripts/pg.sh), which it may stop and restart. */
async function ownCluster(): Promise<{
  url: string;
  datadir: string;
  log: string;
  pgCtl: (...args: string[]) => Promise<void>;
}> {
  const state = join(ROOT, '.tmp', `pg-faults-${process.pid}`);
  const script = join(ROOT, 'scripts/pg.sh');
  cleanups.push(() => run('bash', [script, 'stop', state], { timeout: 60_000 }));
  const { stdout } = await run('bash', [script, 'start', state], { timeout: 120_000 });
  const url = stdout.trim().split('\n').at(-1)!;
  const datadir = join(readFileSync(join(state, 'datadir'), 'utf8').trim(), 'data');
  const pgCtlPath = join(readFileSync(join(state, 'bindir'), 'utf8').trim(), 'pg_ctl');
  const asOwner = process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--'] : [];
  const pgCtl = async (...args: string[]) => {
    const [command, ...rest] = [...asOwner, pgCtlPath, '-D', datadir, ...args];
    await run(command!, rest, { timeout: 60_000 });
  };
  return { url, datadir, log: readFileSync(join(state, 'log'), 'utf8').trim(), pgCtl };
}

/** The server options the cluster was started with, for `pg_ctl start -o` (pg_ctl restart reads them itself). */
function startOptions(datadirOf: string): string {
  const opts = readFileSync(join(datadirOf, 'postmaster.opts'), 'utf8');
  const quoted = [...opts.matchAll(/"([^"]*)"/g)].map((m) => m[1]!);
  const at = quoted.indexOf('-D');
  return quoted.filter((_, i) => i !== at && i !== at + 1).join(' ');
}

describeWithPg('faults: PostgreSQL ledger under several baton serve instances', () => {
  it('PostgreSQL restarted and stopped mid-load: -32000 ledger_unavailable, recovery without restart, exactly once', {
    timeout: 120_000,
  }, async () => {
    const cluster = await ownCluster();
    const stepLog = join(ROOT, '.tmp', `pg-faults-steps-${process.pid}.log`);
    const hold = join(ROOT, '.tmp', `pg-faults-hold-${process.pid}`);
    cleanups.push(async () => rmSync(stepLog, { force: true }));
    cleanups.push(async () => rmSync(hold, { force: true }));
    const instances = await startInstances(cluster.url, { BATON_FAULT_STEP_LOG: stepLog, BATON_FAULT_HOLD: hold });
    const dead = new Set<number>();
    const tally = newTally();
    let acknowledged = 0;
    const load = Promise.all(
      Array.from({ length: CLIENTS }, async (_, c) => {
        const client = await rotatingClient(instances, c % INSTANCES, dead, tally);
        await clientLoad(client, c, tally, () => acknowledged++);
      }),
    );
    load.catch(() => {}); // awaited below; a failure must not go unhandled meanwhile

    // 1. A restart as operators do it, while rounds are in flight.
    await until(() => acknowledged, CLIENTS / 2, load);
    // With -l: without a log file the new server would hold pg_ctl's output open.
    await cluster.pgCtl('restart', '-m', 'fast', '-w', '-t', '30', '-l', cluster.log);

    // 2. An outage long enough to see: a round that must redeem is refused, on every instance,
    //    with the retryable error; the same state succeeds once the server is back.
    await until(() => acknowledged, CLIENTS * 2, load);
    const probe = await rotatingClient(instances, 0, dead);
    const pending = [];
    for (let i = 0; i < INSTANCES; i++) {
      const call = { name: 'issue_receipt', arguments: { item: `probe-${i}` } };
      pending.push({ ...call, requestState: expectInputRequired(await toolRound(probe, call)).requestState });
    }
    const options = startOptions(cluster.datadir);
    await cluster.pgCtl('stop', '-m', 'fast', '-w', '-t', '30');
    const answers = { confirm: { action: 'accept', content: { confirm: true } } };
    for (const params of pending) {
      // One request per instance: the probe client rotates.
      expect(await protocolError(toolRound(probe, { ...params, inputResponses: answers }))).toEqual(LEDGER_UNAVAILABLE);
    }
    await sleep(1000);
    await cluster.pgCtl('start', '-w', '-t', '30', '-l', cluster.log, '-o', options);
    for (const params of pending) {
      const done = await resilientRound(probe, { ...params, inputResponses: answers }, tally);
      expect(textOf(done as { content?: unknown })).toMatch(/^Receipt R-/);
    }

    // 3. A durable step running when the database stops: its record fails, the round is the
    //    retryable error (not the flow's "failed" branch), and the retry of the same state on the
    //    next instance gets the step's outcome once it is recorded: the step ran once.
    writeFileSync(hold, '');
    const stampCall = { name: 'stamp_receipt', arguments: { item: 'stamp-probe' } };
    const stampParams = {
      ...stampCall,
      requestState: expectInputRequired(await toolRound(probe, stampCall)).requestState,
      inputResponses: answers,
    };
    const stamping = protocolError(toolRound(probe, stampParams));
    stamping.catch(() => {}); // awaited below
    const steps = () => (existsSync(stepLog) ? readFileSync(stepLog, 'utf8').trim().split('\n') : []);
    for (let i = 0; i < 1500 && !steps().some((line) => line.startsWith('start ')); i++) await sleep(20);
    await cluster.pgCtl('stop', '-m', 'fast', '-w', '-t', '30');
    rmSync(hold);
    await sleep(1000);
    await cluster.pgCtl('start', '-w', '-t', '30', '-l', cluster.log, '-o', options);
    expect(await stamping).toEqual(LEDGER_UNAVAILABLE);
    let stamped = await resilientRound(probe, stampParams, tally);
    // Another instance may find the step still being recorded: "retry later" (same request, its new state).
    for (let i = 0; i < 10 && stamped !== 'replayed' && 'resultType' in stamped; i++) {
      if (stamped.resultType !== 'input_required') break;
      stamped = await resilientRound(
        probe,
        { ...stampCall, requestState: expectInputRequired(stamped).requestState },
        tally,
      );
    }
    expect(textOf(stamped as { content?: unknown })).toMatch(/^Stamp S-[0-9a-f-]{36} for stamp-probe$/);
    const ran = steps().filter((line) => line.startsWith('ran '));
    expect(ran).toHaveLength(1);

    await load;
    expect(tally.unexpected).toEqual([]);
    expect(tally.finals).toHaveLength(CLIENTS * FLOWS_PER_CLIENT);
    for (const instance of instances) expect(instance.child.exitCode).toBeNull(); // recovered, never restarted
    await expectRecordedOutcomes(probe, tally);
    console.log(
      `faults (PostgreSQL restart and outage): ${tally.finals.length} flows, ${tally.unavailable} rounds refused ` +
        `as ledger_unavailable during load and retried, ${tally.startedOver} flows started over`,
    );
  });

  it('one instance SIGKILLed mid-load: every client completes on the others', { timeout: 120_000 }, async () => {
    const database = await createTestDatabase(pgUrl);
    cleanups.push(database.drop);
    const instances = await startInstances(database.url);
    const dead = new Set<number>();
    const tally = newTally();
    let acknowledged = 0;
    // Once a quarter of the flows are done, the instance is killed the moment a request was
    // sent to it: that request (and any other it was serving) is lost with it.
    const victim = instances[1]!;
    let armed = false;
    const sent = (index: number) => {
      if (!armed || index !== 1 || dead.has(1)) return;
      dead.add(1);
      victim.child.kill('SIGKILL');
    };
    const load = Promise.all(
      Array.from({ length: CLIENTS }, async (_, c) => {
        const client = await rotatingClient(instances, c % INSTANCES, dead, tally, sent);
        await clientLoad(client, c, tally, () => acknowledged++);
      }),
    );
    load.catch(() => {});

    const exited = new Promise((resolve) => victim.child.once('exit', resolve));
    await until(() => acknowledged, CLIENTS, load);
    armed = true;

    await load;
    expect(dead.has(1)).toBe(true);
    await exited;
    expect(tally.unexpected).toEqual([]);
    expect(tally.failedFetches).toBeGreaterThanOrEqual(1);
    expect(tally.finals).toHaveLength(CLIENTS * FLOWS_PER_CLIENT);
    expect(instances[0]!.child.exitCode).toBeNull();
    expect(instances[2]!.child.exitCode).toBeNull();
    const checker = await rotatingClient(instances, 0, dead);
    await expectRecordedOutcomes(checker, tally);
    console.log(
      `faults (SIGKILL): ${tally.finals.length} flows; ${tally.failedFetches} requests failed with the killed ` +
        `instance, ${tally.lostWithInstance} rounds retried elsewhere, ${tally.startedOver} flows started over`,
    );
  });
});
