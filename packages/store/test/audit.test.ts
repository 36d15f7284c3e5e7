/**
 * The audit trail: one contract suite run against the memory, SQLite (a real
 * file) and PostgreSQL (a real server, from the global setup) audit logs —
 * append and read back, JSON fields (nested state values, answer values)
 * round-trip, instances grouped newest first with the flow filter and the
 * limit, idempotent append on (fid, round), another call's round renumbered
 * after the instance's last (never lost), `via`, pruning by time, and appends that
 * never throw. Then the start-up migrations with the audit table (a second
 * start changes nothing) and `openAuditLog` with its retention schedule.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { AuditEntry } from '@baton/engine';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createSqliteAuditLog, createSqliteLedger } from '../src/better-sqlite3/index.js';
import { SCHEMA_VERSION } from '../src/core/migrations.js';
import {
  AuditEntryError,
  type AuditLogOptions,
  createMemoryAuditLog,
  openAuditLog,
  type StoreAuditLog,
} from '../src/index.js';
import { createPostgresAuditLog, createPostgresLedger } from '../src/node-postgres/index.js';
import { T0 } from './helpers/contract/fixtures.js';
import { createTestDatabase, describePg } from './helpers/postgres.js';
import { useTempDir } from './helpers/tmp.js';

const newFid = () => randomBytes(12).toString('base64url');

/** A plausible entry; `overrides` win. */
function entry(overrides: Partial<AuditEntry> & Pick<AuditEntry, 'fid' | 'round'>): AuditEntry {
  return {
    flow: 'book_trip',
    hash: 'h1',
    at: T0 + overrides.round * 1000,
    ms: 12,
    principal: 'cHJpbmNpcGFs',
    via: 'call',
    before: overrides.round === 1 ? null : 'asking',
    after: 'asking',
    path: ['asking'],
    asked: ['dates'],
    received: [],
    outcome: 'input_required',
    ...overrides,
  };
}

type Opened = { log: StoreAuditLog; dispose?: () => Promise<void> };

/** The contract every audit log shares; `open` gives a fresh, empty log for each test. */
function auditContract(name: string, open: (options: AuditLogOptions) => Promise<Opened>): void {
  describe(`${name}: AuditLog contract`, () => {
    const opened: Opened[] = [];
    afterEach(async () => {
      for (const { log, dispose } of opened.splice(0)) {
        await log.close();
        await dispose?.();
      }
    });
    const fresh = async (options: AuditLogOptions = {}) => {
      const result = await open({ pruneIntervalMs: 0, ...options });
      opened.push(result);
      return result.log;
    };

    it('appends rounds and reads them back in round order', async () => {
      const log = await fresh();
      const fid = newFid();
      const second = entry({ fid, round: 2, received: [{ key: 'dates', action: 'accept' }], outcome: 'complete' });
      const first = entry({ fid, round: 1 });
      await log.append(second);
      await log.append(first);
      await log.append(entry({ fid: newFid(), round: 1 }));
      expect(await log.rounds(fid)).toEqual([first, second]);
      expect(await log.rounds('no-such-fid')).toEqual([]);
    });

    it('round-trips the JSON fields: nested state values, paths, asked keys, answers and values', async () => {
      const log = await fresh();
      const fid = newFid();
      const nested = { booking: { flights: 'choosing', hotel: { search: 'asking' } }, payment: 'idle' };
      const full: AuditEntry = {
        fid,
        flow: 'book_trip',
        hash: 'sha256-abc',
        round: 3,
        at: T0 + 123_456,
        ms: 7,
        principal: 'k3yedH4sh',
        via: 'decide',
        before: { booking: { flights: 'idle', hotel: 'idle' }, payment: 'idle' },
        after: nested,
        path: [{ booking: { flights: 'idle', hotel: 'idle' }, payment: 'idle' }, 'between', nested],
        asked: ['hotel.dates', 'payment/card', 'ünïcødé 🚀'],
        received: [
          {
            key: 'dates',
            action: 'accept',
            value: { content: { from: '2026-12-01', nights: 3, flex: [1, null, true] } },
          },
          { key: 'card', action: 'decline' },
          { key: 'quote"s', action: 'invalid', value: 'line\nbreak \u0000 and "quotes"' },
        ],
        outcome: 'error',
        message: 'The hotel service is unavailable.',
      };
      await log.append(full);
      // Schema 5: arguments, the readable principal and the state's expiry round-trip too.
      const details: AuditEntry = {
        ...full,
        fid: newFid(),
        args: { city: 'Zürich', nights: 3, tags: ['a', null] },
        principalName: 'alice@example.com',
        expiresAt: T0 + 900_000,
        received: [{ key: 'dates', action: 'accept', held: true }],
      };
      await log.append(details);
      expect(await log.rounds(details.fid)).toEqual([details]);
      const [back] = await log.rounds(fid);
      expect(back).toEqual(full);
      expect(JSON.stringify(back)).toBe(JSON.stringify(full));
      // No message: the property is absent, not undefined or null.
      const plain = entry({ fid, round: 4 });
      await log.append(plain);
      expect(Object.hasOwn((await log.rounds(fid))[1]!, 'message')).toBe(false);
    });

    it('keeps the first entry of a round: a retried append is ignored', async () => {
      const log = await fresh();
      const fid = newFid();
      const original = entry({ fid, round: 1, outcome: 'input_required' });
      await log.append(original);
      await log.append({ ...original, ms: 999, outcome: 'complete', after: 'done' });
      await Promise.all([log.append(original), log.append(original)]);
      expect(await log.rounds(fid)).toEqual([original]);
      expect((await log.instances()).filter((i) => i.fid === fid)).toHaveLength(1);
    });

    it('records whose call ran each round (via), and refuses a via that is not a word', async () => {
      const failures: unknown[] = [];
      const log = await fresh({ onError: (error) => failures.push(error) });
      const fid = newFid();
      const rounds = (['call', 'decide', 'resume', 'withdraw'] as const).map((via, i) =>
        entry({ fid, round: i + 1, via }),
      );
      for (const round of rounds) await log.append(round);
      expect((await log.rounds(fid)).map((e) => e.via)).toEqual(['call', 'decide', 'resume', 'withdraw']);
      // An entry without via (a JavaScript caller that predates it) is the requester's call.
      const { via: _via, ...bare } = entry({ fid, round: 5 });
      await log.append(bare as AuditEntry);
      expect((await log.rounds(fid))[4]!.via).toBe('call');
      await log.append(entry({ fid, round: 6, via: 'Robert; drop table' as never }));
      expect(failures).toEqual([expect.any(AuditEntryError)]);
      expect(String((failures[0] as Error).message)).toMatch(/"via"/);
      expect(await log.rounds(fid)).toHaveLength(5);
    });

    it("keeps another call's round whose number is taken: numbered after the instance's last", async () => {
      const log = await fresh();
      const fid = newFid();
      const mine = [1, 2, 3, 4].map((round) => entry({ fid, round }));
      for (const round of mine) await log.append(round);
      // A decider's round, numbered from the parked state while the requester's calls went on.
      const decided = entry({
        fid,
        round: 3,
        at: T0 + 3500,
        via: 'decide',
        principal: 'ZGVjaWRlcg',
        outcome: 'complete',
      });
      await log.append(decided);
      // Its retry is still a retry (ignored), though it now lives under another number.
      await log.append(decided);
      const resumed = entry({ fid, round: 4, at: T0 + 6000, via: 'resume', outcome: 'complete' });
      await log.append(resumed);
      expect(await log.rounds(fid)).toEqual([...mine, { ...decided, round: 5 }, { ...resumed, round: 6 }]);
      expect((await log.instances()).find((i) => i.fid === fid)).toMatchObject({ rounds: 6, lastOutcome: 'complete' });

      // Rounds racing for one number each get their own; none is lost, none is doubled.
      const racing = [0, 1, 2, 3, 4].map((i) => entry({ fid, round: 2, at: T0 + 10_000 + i, via: 'decide' }));
      await Promise.all(racing.flatMap((round) => [log.append(round), log.append(round)]));
      const after = await log.rounds(fid);
      expect(after.map((e) => e.round)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
      expect(
        after
          .slice(6)
          .map((e) => e.at)
          .sort(),
      ).toEqual(racing.map((e) => e.at));
    });

    it('lists instances newest first, with their rounds, first and last time, and last outcome', async () => {
      const log = await fresh();
      const [a, b, c] = [newFid(), newFid(), newFid()];
      await log.append(entry({ fid: a, round: 1, at: T0 }));
      await log.append(entry({ fid: b, round: 1, at: T0 + 10 }));
      await log.append(entry({ fid: a, round: 2, at: T0 + 20, outcome: 'input_required' }));
      await log.append(entry({ fid: a, round: 3, at: T0 + 30, outcome: 'complete' }));
      await log.append(entry({ fid: c, round: 1, at: T0 + 25, flow: 'refund', outcome: 'error', message: 'no' }));
      expect(await log.instances()).toEqual([
        { fid: a, flow: 'book_trip', rounds: 3, firstAt: T0, lastAt: T0 + 30, lastOutcome: 'complete' },
        { fid: c, flow: 'refund', rounds: 1, firstAt: T0 + 25, lastAt: T0 + 25, lastOutcome: 'error' },
        { fid: b, flow: 'book_trip', rounds: 1, firstAt: T0 + 10, lastAt: T0 + 10, lastOutcome: 'input_required' },
      ]);
    });

    it('filters instances by flow', async () => {
      const log = await fresh();
      const [a, b, c] = [newFid(), newFid(), newFid()];
      await log.append(entry({ fid: a, round: 1, at: T0, flow: 'refund' }));
      await log.append(entry({ fid: b, round: 1, at: T0 + 1, flow: 'book_trip' }));
      await log.append(entry({ fid: c, round: 1, at: T0 + 2, flow: 'refund' }));
      await log.append(entry({ fid: c, round: 2, at: T0 + 3, flow: 'refund', outcome: 'complete' }));
      const refunds = await log.instances({ flow: 'refund' });
      expect(refunds.map((i) => [i.fid, i.rounds, i.lastOutcome])).toEqual([
        [c, 2, 'complete'],
        [a, 1, 'input_required'],
      ]);
      expect(await log.instances({ flow: 'nothing-here' })).toEqual([]);
      expect((await log.instances({ flow: 'refund', limit: 1 })).map((i) => i.fid)).toEqual([c]);
    });

    it('limits instances to 100 by default, or to the limit given', async () => {
      const log = await fresh();
      const fids = Array.from({ length: 105 }, (_, i) => `fid-${String(i).padStart(3, '0')}`);
      for (const [i, fid] of fids.entries()) await log.append(entry({ fid, round: 1, at: T0 + i }));
      const listed = await log.instances();
      expect(listed).toHaveLength(100);
      expect(listed[0]!.fid).toBe('fid-104');
      expect(listed[99]!.fid).toBe('fid-005');
      expect((await log.instances({ limit: 3 })).map((i) => i.fid)).toEqual(['fid-104', 'fid-103', 'fid-102']);
      expect(await log.instances({ limit: 0 })).toEqual([]);
      await expect(log.instances({ limit: -1 })).rejects.toThrow(RangeError);
    });

    it('prunes entries that started before the cutoff, and only those', async () => {
      const log = await fresh();
      const [old, mixed, recent] = [newFid(), newFid(), newFid()];
      await log.append(entry({ fid: old, round: 1, at: T0 - 5000 }));
      await log.append(entry({ fid: old, round: 2, at: T0 - 4000 }));
      await log.append(entry({ fid: mixed, round: 1, at: T0 - 1 }));
      await log.append(entry({ fid: mixed, round: 2, at: T0 }));
      await log.append(entry({ fid: recent, round: 1, at: T0 + 1 }));
      expect(await log.prune(T0)).toBe(3);
      expect(await log.rounds(old)).toEqual([]);
      expect((await log.rounds(mixed)).map((e) => e.round)).toEqual([2]);
      expect((await log.instances()).map((i) => [i.fid, i.rounds])).toEqual([
        [recent, 1],
        [mixed, 1],
      ]);
      expect(await log.prune(T0)).toBe(0);
    });

    it('never throws from append: bad entries and a closed log are reported, without values', async () => {
      const failures: unknown[] = [];
      const log = await fresh({ onError: (error) => failures.push(error) });
      const fid = newFid();
      const circular: Record<string, unknown> = { secret: 'hunter2' };
      circular.self = circular;
      await expect(log.append(entry({ fid, round: 1, before: circular as never }))).resolves.toBeUndefined();
      await expect(log.append(entry({ fid, round: 'x' as never }))).resolves.toBeUndefined();
      await expect(log.append(entry({ fid, round: 2, outcome: 'exploded' as never }))).resolves.toBeUndefined();
      await expect(log.append(null as never)).resolves.toBeUndefined();
      expect(failures).toHaveLength(4);
      expect(failures.every((f) => f instanceof AuditEntryError)).toBe(true);
      expect(await log.rounds(fid)).toEqual([]);

      // The default report is one line on stderr, with no value from the entry.
      const quiet = await fresh();
      const spy = vi.spyOn(console, 'error').mockImplementation(() => {});
      try {
        await quiet.append(entry({ fid, round: 1, before: circular as never }));
        expect(spy).toHaveBeenCalledTimes(1);
        const line = spy.mock.calls[0]!.map(String).join(' ');
        expect(line).toMatch(/audit: could not record round 1 of flow "book_trip": AuditEntryError/);
        expect(line).not.toContain('hunter2');
        expect(line).not.toContain('\n');
      } finally {
        spy.mockRestore();
      }

      await log.close();
      await expect(log.append(entry({ fid, round: 5 }))).resolves.toBeUndefined();
      expect(failures).toHaveLength(5);
    });
  });
}

auditContract('memory', async (options) => ({ log: createMemoryAuditLog(options) }));

describe('sqlite audit log', () => {
  const dir = useTempDir('baton-audit-');
  let n = 0;
  auditContract('sqlite', async (options) => ({
    log: createSqliteAuditLog({ ...options, path: join(dir(), `audit-${++n}.db`) }),
  }));

  function snapshot(path: string) {
    const db = new Database(path, { readonly: true });
    try {
      return {
        schemaCookie: db.pragma('schema_version', { simple: true }),
        objects: db
          .prepare("select type, name, sql from sqlite_master where name not like 'sqlite_%' order by name")
          .all() as { type: string; name: string; sql: string }[],
        migrations: db.prepare('select hash, created_at from __baton_migrations order by created_at').all(),
        meta: db.prepare('select key, value from baton_meta order by key').all(),
        audit: db.prepare('select * from baton_audit order by fid, round').all(),
        redemptions: db.prepare('select * from baton_redemptions order by jti').all(),
      };
    } finally {
      db.close();
    }
  }

  it('shares the ledger file and migrations; a second start changes nothing', async () => {
    const path = join(dir(), 'shared.db');
    const ledger = createSqliteLedger({ path, pruneIntervalMs: 0 });
    const log = createSqliteAuditLog({ path, pruneIntervalMs: 0 });
    await ledger.redemptions.redeem({ jti: 'kept', responsesDigest: 'd', expiresAt: T0 + 1000, now: T0 });
    await log.append(entry({ fid: 'kept', round: 1 }));
    await log.close();
    await ledger.close();

    const before = snapshot(path);
    expect(before.objects.map((o) => o.name)).toEqual(
      expect.arrayContaining(['baton_audit', 'baton_audit_at_idx', 'baton_audit_flow_at_idx', 'baton_redemptions']),
    );
    expect(before.meta).toEqual([{ key: 'schema_version', value: String(SCHEMA_VERSION) }]);
    expect(SCHEMA_VERSION).toBeGreaterThanOrEqual(2); // the audit trail arrived with version 2

    // Audit log first this time, then the ledger: neither migrates anything again.
    const again = createSqliteAuditLog({ path, pruneIntervalMs: 0 });
    await createSqliteLedger({ path, pruneIntervalMs: 0 }).close();
    expect(await again.rounds('kept')).toEqual([entry({ fid: 'kept', round: 1 })]);
    await again.close();
    expect(snapshot(path)).toEqual(before);
  });

  it('opens from a sqlite: URL and prunes on its schedule with the retention', async () => {
    const path = join(dir(), 'scheduled.db');
    const log = await openAuditLog(`sqlite:${path}`, {
      retentionMs: 10_000,
      pruneIntervalMs: 20,
      clock: () => T0,
    });
    try {
      await log.append(entry({ fid: 'expired', round: 1, at: T0 - 10_001 }));
      await log.append(entry({ fid: 'kept', round: 1, at: T0 - 10_000 }));
      await vi.waitFor(async () => expect(await log.rounds('expired')).toEqual([]), { timeout: 30_000 });
      expect(await log.rounds('kept')).toHaveLength(1);
    } finally {
      await log.close();
    }
  });
});

describe('openAuditLog', () => {
  it('opens memory: and prunes on its schedule (7 days by default)', async () => {
    const log = await openAuditLog('memory:', { pruneIntervalMs: 20, clock: () => T0 });
    try {
      const week = 7 * 24 * 60 * 60 * 1000;
      await log.append(entry({ fid: 'old', round: 1, at: T0 - week - 1 }));
      await log.append(entry({ fid: 'young', round: 1, at: T0 - week + 1 }));
      await vi.waitFor(async () => expect(await log.rounds('old')).toEqual([]), { timeout: 30_000 });
      expect(await log.rounds('young')).toHaveLength(1);
    } finally {
      await log.close();
    }
  });

  it('refuses URLs it does not know, like openLedger', async () => {
    await expect(openAuditLog('mysql://nope')).rejects.toThrow(/Unsupported ledger URL/);
  });
});

describePg('postgres audit log', (serverUrl) => {
  auditContract('postgres', async (options) => {
    const { url, drop } = await createTestDatabase(serverUrl);
    return { log: await createPostgresAuditLog({ ...options, connectionString: url }), dispose: drop };
  });

  let url = '';
  let drop: () => Promise<void> = async () => {};
  beforeAll(async () => {
    ({ url, drop } = await createTestDatabase(serverUrl));
  });
  afterAll(async () => drop());

  async function query<T = any>(text: string): Promise<T[]> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query(text)).rows as T[];
    } finally {
      await client.end();
    }
  }
  const snapshot = async () => ({
    columns: await query(
      "select table_name, column_name, data_type, is_nullable from information_schema.columns where table_schema in ('public', 'drizzle') order by 1, 2",
    ),
    indexes: await query(
      "select indexname, indexdef from pg_indexes where schemaname in ('public', 'drizzle') order by 1",
    ),
    // xmin is the id of the transaction that last wrote a row: a rewrite would change it.
    migrations: await query('select xmin::text, id, hash, created_at from drizzle.__baton_migrations order by id'),
    meta: await query('select xmin::text, key, value from baton_meta order by key'),
    audit: await query('select xmin::text, * from baton_audit order by fid, round'),
  });

  it('shares the ledger database and migrations; a second start changes nothing', async () => {
    const ledger = await createPostgresLedger({ connectionString: url, pruneIntervalMs: 0 });
    const log = await createPostgresAuditLog({ connectionString: url, pruneIntervalMs: 0 });
    await log.append(entry({ fid: 'kept', round: 1 }));
    await log.close();
    await ledger.close();

    const before = await snapshot();
    expect(before.indexes.map((i: any) => i.indexname)).toEqual(
      expect.arrayContaining(['baton_audit_pk', 'baton_audit_at_idx', 'baton_audit_flow_at_idx']),
    );
    expect(before.columns.filter((c: any) => c.table_name === 'baton_audit').map((c: any) => c.column_name)).toEqual([
      'after',
      'args',
      'asked',
      'at',
      'before',
      'expires_at',
      'fid',
      'flow',
      'hash',
      'message',
      'ms',
      'outcome',
      'path',
      'principal',
      'principal_name',
      'received',
      'round',
      'via',
    ]);
    expect(before.meta).toEqual([{ xmin: expect.any(String), key: 'schema_version', value: String(SCHEMA_VERSION) }]);

    const again = await openAuditLog(url, { pruneIntervalMs: 0 });
    await (await createPostgresLedger({ connectionString: url, pruneIntervalMs: 0 })).close();
    expect(await again.rounds('kept')).toEqual([entry({ fid: 'kept', round: 1 })]);
    await again.close();
    expect(await snapshot()).toEqual(before);
  });

  it('runs on a pool it is given (next to the ledger on the same pool) and leaves it open', async () => {
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    try {
      const ledger = await createPostgresLedger({ pool, pruneIntervalMs: 0 });
      const log = await createPostgresAuditLog({ pool, pruneIntervalMs: 0 });
      await ledger.redemptions.redeem({ jti: 'pooled', responsesDigest: 'd', expiresAt: T0 + 1000, now: T0 });
      await log.append(entry({ fid: 'pooled', round: 1 }));
      await log.close();
      await ledger.close();
      expect((await pool.query('select count(*)::int as n from baton_audit where fid = $1', ['pooled'])).rows).toEqual([
        { n: 1 },
      ]);
    } finally {
      await pool.end();
    }
  });

  it('reports a lost connection without throwing into the round', async () => {
    const failures: unknown[] = [];
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    const log = await createPostgresAuditLog({ pool, pruneIntervalMs: 0, onError: (e) => failures.push(e) });
    await pool.end();
    await expect(log.append(entry({ fid: 'lost', round: 1 }))).resolves.toBeUndefined();
    expect(failures).toHaveLength(1);
    await log.close();
  });
});
