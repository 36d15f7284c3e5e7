/**
 * Races between OS processes: four workers redeem the same 500 jtis, and
 * separately the same 500 single-use tokens, at the same moment, on one
 * SQLite file and on one PostgreSQL database. Every item must be won exactly
 * once, by one process, and lost by all the others. The jti race on SQLite
 * starts from a file that does not exist yet, so the workers also race to
 * create and migrate it. Then the approvals: the four record the same 200
 * decisions of 100 parked requests (each recorded once, by the worker that
 * was told so, with its answer, each a compare-and-set on its request's
 * version), and move the same 100 parked requests on by compare-and-set from
 * version 1 to 5 (each version written exactly once, the last writer's state
 * kept). Then the durable steps: the four claim the same 200 steps (half never
 * claimed, half held by a dead owner whose lease ended) and record the outcome
 * of those they won: each claimed once and recorded once, by the winner.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { FullLedger } from '@baton/engine';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSqliteLedger } from '../src/better-sqlite3/index.js';
import { knownMigrations } from '../src/core/migrations.js';
import { createPostgresLedger } from '../src/node-postgres/index.js';
import { decisionRequest, parked } from './helpers/contract/fixtures.js';
import { createTestDatabase, describePg } from './helpers/postgres.js';
import { useTempDir } from './helpers/tmp.js';
import { exited, forkWorker, nextMessage } from './helpers/workers.js';
import type { WorkerCommand, WorkerReport } from './workers/redeem-worker.js';

const WORKERS = 4;
const ITEMS = 500;
const NOW = Date.now();

type Done = Extract<WorkerReport, { type: 'done' }>;

/** Start the workers on one ledger, release them together, and collect their reports. */
async function race(
  kind: 'sqlite' | 'postgres',
  location: string,
  mode: WorkerCommand['mode'],
  items: string[],
  extra: Partial<WorkerCommand> = {},
) {
  const workers = Array.from({ length: WORKERS }, () => forkWorker('redeem-worker.ts', [kind, location]));
  await Promise.all(workers.map((w) => nextMessage(w, (m) => m.type === 'ready')));
  const startAt = Date.now() + 100;
  const reports = Promise.all(workers.map((w) => nextMessage<Done>(w, (m) => m.type === 'done')));
  workers.forEach((worker, i) => {
    // Half go forwards, half backwards, so collisions happen everywhere in the list.
    const order = i % 2 === 0 ? items : [...items].reverse();
    const command: WorkerCommand = {
      type: 'go',
      mode,
      items: order,
      startAt,
      now: NOW,
      concurrency: 8,
      worker: i,
      ...extra,
    };
    worker.send(command);
  });
  const done = await reports;
  await Promise.all(workers.map((w) => exited(w)));
  return done;
}

function expectEachWonOnce(done: Done[], items: string[], loser: 'in_progress' | 'already_used'): void {
  const won = done.flatMap((d) => d.won);
  expect(won).toHaveLength(items.length);
  expect(new Set(won)).toEqual(new Set(items));
  expect(done.reduce((sum, d) => sum + (d.counts.redeemed ?? 0), 0)).toBe(items.length);
  expect(done.reduce((sum, d) => sum + (d.counts[loser] ?? 0), 0)).toBe(items.length * (WORKERS - 1));
  for (const d of done) expect(Object.keys(d.counts).every((k) => k === 'redeemed' || k === loser)).toBe(true);
}

const jtis = () => Array.from({ length: ITEMS }, () => randomBytes(16).toString('base64url'));

const DECISION_REQUESTS = 100;
const PARKED = 100;
const TARGET_VERSION = 5;

/** 100 requests parked with two decisions each: 200 `id/key` pairs, requested in `ledger`. */
async function requestRaceDecisions(ledger: FullLedger): Promise<string[]> {
  const ids = Array.from({ length: DECISION_REQUESTS }, () => `R-${randomBytes(9).toString('base64url')}`);
  for (const id of ids) await ledger.requests.parkRequest(parked(id, { now: NOW, expiresAt: NOW + 3_600_000 }), null);
  await ledger.decisions.requestDecisions(
    ids.flatMap((id) => [
      decisionRequest(id, 'manager_approval', { requestedAt: NOW, deadline: NOW + 3_600_000 }),
      decisionRequest(id, 'finance_approval', { requestedAt: NOW, deadline: null, role: 'finance' }),
    ]),
  );
  return ids.flatMap((id) => [`${id}/manager_approval`, `${id}/finance_approval`]);
}

/** Each pair recorded exactly once, and the ledger holds the winner's name and answer. */
async function expectEachDecidedOnce(done: Done[], pairs: string[], ledger: FullLedger): Promise<void> {
  const won = done.flatMap((d) => d.won);
  expect(won).toHaveLength(pairs.length);
  expect(new Set(won)).toEqual(new Set(pairs));
  expect(done.reduce((sum, d) => sum + (d.counts.recorded ?? 0), 0)).toBe(pairs.length);
  expect(done.reduce((sum, d) => sum + (d.counts.already_decided ?? 0), 0)).toBe(pairs.length * (WORKERS - 1));
  const winner = new Map(done.flatMap((d, i) => d.won.map((pair) => [pair, `worker-${i}`] as const)));
  const ids = [...new Set(pairs.map((pair) => pair.split('/')[0]!))];
  for (const id of ids) {
    // Each recorded decision was one compare-and-set on its request: two of them, two versions on.
    expect((await ledger.requests.getRequest(id))?.version).toBe(3);
    for (const row of await ledger.decisions.listDecisions({ id })) {
      const pair = `${row.id}/${row.key}`;
      expect({ pair, status: row.status, decider: row.decider, content: row.content, at: row.decidedAt }).toEqual({
        pair,
        status: 'decided',
        decider: winner.get(pair),
        content: pair,
        at: NOW,
      });
    }
  }
  for (const d of done) {
    expect(Object.keys(d.counts).every((k) => ['recorded', 'already_decided', 'conflict'].includes(k))).toBe(true);
  }
  console.info(
    `[race] ${WORKERS} processes, ${pairs.length} decisions: ${pairs.length} recorded, ` +
      `${pairs.length * (WORKERS - 1)} already_decided, ${done.reduce((sum, d) => sum + (d.counts.conflict ?? 0), 0)} conflicts; per worker ${done.map((d) => `${d.won.length} won in ${Math.round(d.ms)} ms`).join(', ')}`,
  );
}

/** 100 requests parked at version 1 in `ledger`. */
async function parkRaceRequests(ledger: FullLedger): Promise<string[]> {
  const ids = Array.from({ length: PARKED }, () => `R-${randomBytes(9).toString('base64url')}`);
  for (const id of ids) {
    expect(await ledger.requests.parkRequest(parked(id, { now: NOW, expiresAt: NOW + 3_600_000 }), null)).toEqual({
      status: 'parked',
      version: 1,
    });
  }
  return ids;
}

/** Every version 2..5 of every request written exactly once; the stored state is the last writer's. */
async function expectEachVersionOnce(done: Done[], ids: string[], ledger: FullLedger): Promise<void> {
  const won = done.flatMap((d) => d.won);
  const expected = ids.flatMap((id) => Array.from({ length: TARGET_VERSION - 1 }, (_, i) => `${id}#${i + 2}`));
  expect(won).toHaveLength(expected.length);
  expect(new Set(won)).toEqual(new Set(expected));
  expect(done.reduce((sum, d) => sum + (d.counts.parked ?? 0), 0)).toBe(expected.length);
  for (const d of done) expect(Object.keys(d.counts).every((k) => k === 'parked' || k === 'conflict')).toBe(true);
  const last = new Map(done.flatMap((d, i) => d.won.map((write) => [write, `worker-${i}`] as const)));
  for (const id of ids) {
    const row = await ledger.requests.getRequest(id);
    expect({ id, version: row?.version, state: row?.state, updatedAt: row?.updatedAt }).toEqual({
      id,
      version: TARGET_VERSION,
      state: `${last.get(`${id}#${TARGET_VERSION}`)}:${TARGET_VERSION}`,
      updatedAt: NOW + TARGET_VERSION,
    });
  }
  const conflicts = done.reduce((sum, d) => sum + (d.counts.conflict ?? 0), 0);
  console.info(
    `[race] ${WORKERS} processes, ${ids.length} requests moved from version 1 to ${TARGET_VERSION}: ` +
      `${expected.length} writes won, ${conflicts} conflicts; per worker ${done.map((d) => `${d.won.length} won in ${Math.round(d.ms)} ms`).join(', ')}`,
  );
}

const STEPS = 200;

/** 200 `id/key` steps: the odd ones already claimed by a dead owner whose lease ended. */
async function prepareRaceSteps(ledger: FullLedger): Promise<string[]> {
  const items = Array.from({ length: STEPS }, (_, i) => `F-${randomBytes(9).toString('base64url')}/refund#${i % 2}`);
  for (const [i, item] of items.entries()) {
    if (i % 2 === 0) continue;
    const [id, key] = item.split('/') as [string, string];
    const claim = { id, key, owner: 'dead', leaseUntil: NOW - 1, now: NOW - 60_000, expiresAt: NOW + 3_600_000 };
    expect(await ledger.steps.claimStep(claim)).toEqual({ status: 'claimed', claims: 1 });
  }
  return items;
}

/** Each step claimed by exactly one worker, recorded once with its outcome; takeovers counted. */
async function expectEachStepOnce(done: Done[], items: string[], ledger: FullLedger): Promise<void> {
  const won = done.flatMap((d) => d.won);
  expect(won).toHaveLength(items.length);
  expect(new Set(won)).toEqual(new Set(items));
  const total = (key: string) => done.reduce((sum, d) => sum + (d.counts[key] ?? 0), 0);
  expect(total('claimed')).toBe(items.length);
  expect(total('record_recorded')).toBe(items.length);
  expect(total('held') + total('recorded')).toBe(items.length * (WORKERS - 1));
  const winner = new Map(done.flatMap((d, i) => d.won.map((item) => [item, `worker-${i}`] as const)));
  for (const [i, item] of items.entries()) {
    const [id, key] = item.split('/') as [string, string];
    const row = await ledger.steps.getStep(id, key);
    expect({ item, status: row?.status, owner: row?.owner, outcome: row?.outcome, claims: row?.claims }).toEqual({
      item,
      status: 'succeeded',
      owner: winner.get(item),
      outcome: winner.get(item),
      claims: i % 2 === 0 ? 1 : 2,
    });
  }
  console.info(
    `[race] ${WORKERS} processes, ${items.length} steps: each claimed and recorded once; ` +
      `${total('held')} held, ${total('recorded')} already recorded`,
  );
}

describe('race between processes on one SQLite file', () => {
  const dir = useTempDir();

  it('redeems every jti exactly once (workers also race to create the file)', { timeout: 180_000 }, async () => {
    const path = join(dir(), 'race-jti.db');
    const items = jtis();
    const done = await race('sqlite', path, 'jti', items);
    expectEachWonOnce(done, items, 'in_progress');
    const db = new Database(path, { readonly: true });
    expect((db.prepare('select count(*) as n from baton_redemptions').get() as { n: number }).n).toBe(ITEMS);
    expect((db.prepare('select count(*) as n from __baton_migrations').get() as { n: number }).n).toBe(
      knownMigrations('sqlite').count,
    );
    db.close();
  });

  it('redeems every single-use token exactly once', { timeout: 180_000 }, async () => {
    const path = join(dir(), 'race-token.db');
    const ledger = createSqliteLedger({ path, pruneIntervalMs: 0 });
    const codes: string[] = [];
    for (let i = 0; i < ITEMS; i++) {
      codes.push(await ledger.redemptions.mintToken({ purpose: 'race', expiresAt: NOW + 3_600_000, now: NOW }));
    }
    await ledger.close();
    const done = await race('sqlite', path, 'token', codes);
    expectEachWonOnce(done, codes, 'already_used');
  });

  it('records every decision exactly once', { timeout: 180_000 }, async () => {
    const path = join(dir(), 'race-decision.db');
    const ledger = createSqliteLedger({ path, pruneIntervalMs: 0 });
    try {
      const pairs = await requestRaceDecisions(ledger);
      const done = await race('sqlite', path, 'decision', pairs);
      await expectEachDecidedOnce(done, pairs, ledger);
    } finally {
      await ledger.close();
    }
  });

  it('writes every version of a parked request exactly once', { timeout: 180_000 }, async () => {
    const path = join(dir(), 'race-park.db');
    const ledger = createSqliteLedger({ path, pruneIntervalMs: 0 });
    try {
      const ids = await parkRaceRequests(ledger);
      const done = await race('sqlite', path, 'park', ids, { targetVersion: TARGET_VERSION });
      await expectEachVersionOnce(done, ids, ledger);
    } finally {
      await ledger.close();
    }
  });

  it('claims and records every durable step exactly once', { timeout: 180_000 }, async () => {
    const path = join(dir(), 'race-step.db');
    const ledger = createSqliteLedger({ path, pruneIntervalMs: 0 });
    try {
      const items = await prepareRaceSteps(ledger);
      const done = await race('sqlite', path, 'step', items);
      await expectEachStepOnce(done, items, ledger);
    } finally {
      await ledger.close();
    }
  });
});

describePg('race between processes on one PostgreSQL database', (serverUrl) => {
  let url = '';
  let drop: () => Promise<void> = async () => {};
  beforeAll(async () => {
    ({ url, drop } = await createTestDatabase(serverUrl));
  });
  afterAll(async () => drop());

  it('redeems every jti exactly once (workers also race to migrate)', { timeout: 180_000 }, async () => {
    const items = jtis();
    const done = await race('postgres', url, 'jti', items);
    expectEachWonOnce(done, items, 'in_progress');
  });

  it('redeems every single-use token exactly once', { timeout: 180_000 }, async () => {
    const ledger = await createPostgresLedger({ connectionString: url, pruneIntervalMs: 0 });
    const codes = await Promise.all(
      Array.from({ length: ITEMS }, () =>
        ledger.redemptions.mintToken({ purpose: 'race', expiresAt: NOW + 3_600_000, now: NOW }),
      ),
    );
    await ledger.close();
    const done = await race('postgres', url, 'token', codes);
    expectEachWonOnce(done, codes, 'already_used');
  });

  it('records every decision exactly once', { timeout: 180_000 }, async () => {
    const ledger = await createPostgresLedger({ connectionString: url, pruneIntervalMs: 0 });
    try {
      const pairs = await requestRaceDecisions(ledger);
      const done = await race('postgres', url, 'decision', pairs);
      await expectEachDecidedOnce(done, pairs, ledger);
    } finally {
      await ledger.close();
    }
  });

  it('writes every version of a parked request exactly once', { timeout: 180_000 }, async () => {
    const ledger = await createPostgresLedger({ connectionString: url, pruneIntervalMs: 0 });
    try {
      const ids = await parkRaceRequests(ledger);
      const done = await race('postgres', url, 'park', ids, { targetVersion: TARGET_VERSION });
      await expectEachVersionOnce(done, ids, ledger);
    } finally {
      await ledger.close();
    }
  });

  it('claims and records every durable step exactly once', { timeout: 180_000 }, async () => {
    const ledger = await createPostgresLedger({ connectionString: url, pruneIntervalMs: 0 });
    try {
      const items = await prepareRaceSteps(ledger);
      const done = await race('postgres', url, 'step', items);
      await expectEachStepOnce(done, items, ledger);
    } finally {
      await ledger.close();
    }
  });
});
