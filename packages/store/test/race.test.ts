/**
 * Races between OS processes: four workers redeem the same 500 jtis, and
 * separately the same 500 single-use tokens, at the same moment, on one
 * SQLite file and on one PostgreSQL database. Every item must be won exactly
 * once, by one process, and lost by all the others. The jti race on SQLite
 * starts from a file that does not exist yet, so the workers also race to
 * create and migrate it.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSqliteLedger } from '../src/better-sqlite3/index.js';
import { knownMigrations } from '../src/core/migrations.js';
import { createPostgresLedger } from '../src/node-postgres/index.js';
import { createTestDatabase, describePg } from './helpers/postgres.js';
import { useTempDir } from './helpers/tmp.js';
import { exited, forkWorker, nextMessage } from './helpers/workers.js';
import type { WorkerCommand, WorkerReport } from './workers/redeem-worker.js';

const WORKERS = 4;
const ITEMS = 500;
const NOW = Date.now();

type Done = Extract<WorkerReport, { type: 'done' }>;

/** Start the workers on one ledger, release them together, and collect their reports. */
async function race(kind: 'sqlite' | 'postgres', location: string, mode: 'jti' | 'token', items: string[]) {
  const workers = Array.from({ length: WORKERS }, () => forkWorker('redeem-worker.ts', [kind, location]));
  await Promise.all(workers.map((w) => nextMessage(w, (m) => m.type === 'ready')));
  const startAt = Date.now() + 100;
  const reports = Promise.all(workers.map((w) => nextMessage<Done>(w, (m) => m.type === 'done')));
  workers.forEach((worker, i) => {
    // Half go forwards, half backwards, so collisions happen everywhere in the list.
    const order = i % 2 === 0 ? items : [...items].reverse();
    const command: WorkerCommand = { type: 'go', mode, items: order, startAt, now: NOW, concurrency: 8 };
    worker.send(command);
  });
  const done = await reports;
  await Promise.all(workers.map((w) => exited(w)));
  return done;
}

function expectEachWonOnce(done: Done[], items: string[], loser: 'replayed' | 'already_used'): void {
  const won = done.flatMap((d) => d.won);
  expect(won).toHaveLength(items.length);
  expect(new Set(won)).toEqual(new Set(items));
  expect(done.reduce((sum, d) => sum + (d.counts.redeemed ?? 0), 0)).toBe(items.length);
  expect(done.reduce((sum, d) => sum + (d.counts[loser] ?? 0), 0)).toBe(items.length * (WORKERS - 1));
  for (const d of done) expect(Object.keys(d.counts).every((k) => k === 'redeemed' || k === loser)).toBe(true);
}

const jtis = () => Array.from({ length: ITEMS }, () => randomBytes(16).toString('base64url'));

describe('race between processes on one SQLite file', () => {
  const dir = useTempDir();

  it('redeems every jti exactly once (workers also race to create the file)', { timeout: 180_000 }, async () => {
    const path = join(dir(), 'race-jti.db');
    const items = jtis();
    const done = await race('sqlite', path, 'jti', items);
    expectEachWonOnce(done, items, 'replayed');
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
      codes.push(await ledger.mintToken({ purpose: 'race', expiresAt: NOW + 3_600_000, now: NOW }));
    }
    await ledger.close();
    const done = await race('sqlite', path, 'token', codes);
    expectEachWonOnce(done, codes, 'already_used');
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
    expectEachWonOnce(done, items, 'replayed');
  });

  it('redeems every single-use token exactly once', { timeout: 180_000 }, async () => {
    const ledger = await createPostgresLedger({ connectionString: url, pruneIntervalMs: 0 });
    const codes = await Promise.all(
      Array.from({ length: ITEMS }, () => ledger.mintToken({ purpose: 'race', expiresAt: NOW + 3_600_000, now: NOW })),
    );
    await ledger.close();
    const done = await race('postgres', url, 'token', codes);
    expectEachWonOnce(done, codes, 'already_used');
  });
});
