/**
 * Start-up migrations, on SQLite and PostgreSQL: a fresh database gets every
 * table and the schema version; an existing one keeps its rows; a second
 * start changes nothing at all; a database left half-way (first migration
 * only) is completed; a database at the previous schema version (2, before
 * parked requests and decisions) is upgraded with its rows intact, as is one at
 * schema version 12 with outbox rows (schema 13 adds their trace context); and a
 * database migrated by a newer Baton (a higher schema version or an unknown
 * later migration) is refused with a clear error and left untouched, which is
 * also how the previous Baton refuses the current schema.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSqliteLedger } from '../src/better-sqlite3/index.js';
import { readSchemaState } from '../src/better-sqlite3/migrate.js';
import { assertNotNewer, knownMigrations, SCHEMA_VERSION } from '../src/core/migrations.js';
import { LedgerError, LedgerSchemaError } from '../src/index.js';
import { createPostgresLedger } from '../src/node-postgres/index.js';
import { decisionRequest, parked, T0 } from './helpers/contract/fixtures.js';
import { createTestDatabase, describePg } from './helpers/postgres.js';
import { useTempDir } from './helpers/tmp.js';

const drizzleFolder = (dialect: 'sqlite' | 'pg') => fileURLToPath(new URL(`../drizzle/${dialect}`, import.meta.url));
const journal = (dialect: 'sqlite' | 'pg') =>
  JSON.parse(readFileSync(join(drizzleFolder(dialect), 'meta/_journal.json'), 'utf8')) as {
    entries: { when: number; tag: string }[];
  };

/** The migrations up to schema version 2 (the audit trail), before parked requests and decisions. */
const VERSION_2_MIGRATIONS = 3;

/** The migrations up to schema version 12 (delegation), before the outbox kept a trace context. */
const VERSION_12_MIGRATIONS = 13;

/** Outbox rows as a Baton at schema version 12 wrote them (no trace context), one delivered. */
const VERSION_12_OUTBOX_ROWS = [
  `insert into baton_outbox (id, type, body, attempts, next_attempt_at, delivered_at, created_at, expires_at)
     values ('N-old-1', 'decision.requested', '{"a":1}', 0, ${T0}, null, ${T0}, ${T0 + 7 * 86_400_000})`,
  `insert into baton_outbox (id, type, body, attempts, next_attempt_at, delivered_at, created_at, expires_at)
     values ('N-old-2', 'request.ended', '{}', 1, ${T0}, ${T0 + 5}, ${T0 + 1}, ${T0 + 7 * 86_400_000})`,
];

/** A copy of `dialect`'s migrations folder holding only its first `count` migrations. */
function partialMigrations(dialect: 'sqlite' | 'pg', count: number, into: string): string {
  mkdirSync(join(into, 'meta'), { recursive: true });
  const { entries } = journal(dialect);
  for (const entry of entries.slice(0, count)) {
    cpSync(join(drizzleFolder(dialect), `${entry.tag}.sql`), join(into, `${entry.tag}.sql`));
  }
  writeFileSync(
    join(into, 'meta/_journal.json'),
    JSON.stringify({ ...journal(dialect), entries: entries.slice(0, count) }),
  );
  return into;
}

/** Rows of every table that existed at schema version 2, as one inserts them by hand. */
const VERSION_2_ROWS = [
  `insert into baton_redemptions (jti, responses_digest, outcome, expires_at, redeemed_at)
     values ('kept-jti', 'd', 'sealed', ${T0 + 1000}, ${T0})`,
  `insert into baton_tokens (code_hash, purpose, data, expires_at, used_at, created_at)
     values ('kept-hash', 'p', 'x', ${T0 + 1000}, null, ${T0})`,
  `insert into baton_audit (fid, flow, hash, round, at, ms, principal, before, after, path, asked, received, outcome, message)
     values ('fid-1', 'f', 'h', 1, ${T0}, 5, 'ph', null, '"s"', '[]', '[]', '[]', 'complete', null)`,
];

describe('SQLite migrations', () => {
  const dir = useTempDir();
  let n = 0;
  const freshPath = () => join(dir(), `migrations-${++n}.db`);

  /** Everything a migration could touch, plus SQLite's schema cookie (bumped by any DDL). */
  function snapshot(path: string) {
    const db = new Database(path, { readonly: true });
    try {
      return {
        schemaCookie: db.pragma('schema_version', { simple: true }),
        objects: db
          .prepare("select type, name, sql from sqlite_master where name not like 'sqlite_%' order by name")
          .all(),
        migrations: db.prepare('select hash, created_at from __baton_migrations order by created_at').all(),
        meta: db.prepare('select key, value from baton_meta order by key').all(),
        redemptions: db.prepare('select * from baton_redemptions order by jti').all(),
      };
    } finally {
      db.close();
    }
  }

  function exec(path: string, statement: string): void {
    const db = new Database(path);
    db.exec(statement);
    db.close();
  }

  it('creates every table, records each migration and the schema version on a fresh file', async () => {
    const path = freshPath();
    await createSqliteLedger({ path, pruneIntervalMs: 0 }).close();
    const state = snapshot(path);
    const names = (state.objects as { name: string }[]).map((o) => o.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'baton_meta',
        'baton_redemptions',
        'baton_redemptions_expires_at_idx',
        'baton_tokens',
        'baton_tokens_expires_at_idx',
        'baton_audit',
        'baton_requests',
        'baton_requests_requester_updated_at_idx',
        'baton_requests_expires_at_idx',
        'baton_decisions',
        'baton_decisions_status_role_idx',
        '__baton_migrations',
      ]),
    );
    expect(state.migrations.map((m: any) => Number(m.created_at))).toEqual(
      journal('sqlite').entries.map((e) => e.when),
    );
    expect(state.meta).toEqual([{ key: 'schema_version', value: String(SCHEMA_VERSION) }]);
  });

  it('keeps the rows of an existing file, and a second start changes nothing', async () => {
    const path = freshPath();
    const first = createSqliteLedger({ path, pruneIntervalMs: 0 });
    await first.redemptions.redeem({ jti: 'kept', responsesDigest: 'd', expiresAt: T0 + 1000, now: T0 });
    await first.redemptions.recordOutcome('kept', 'sealed');
    await first.close();
    const before = snapshot(path);

    const second = createSqliteLedger({ path, pruneIntervalMs: 0 });
    expect(
      await second.redemptions.redeem({ jti: 'kept', responsesDigest: 'd', expiresAt: T0 + 1000, now: T0 }),
    ).toEqual({
      status: 'retry',
      outcome: 'sealed',
    });
    await second.close();
    expect(snapshot(path)).toEqual(before);
  });

  it('completes a file that only has the first migration', async () => {
    const path = freshPath();
    const partial = partialMigrations('sqlite', 1, join(dir(), `partial-${n}`));
    const { entries } = journal('sqlite');
    const client = new Database(path);
    migrate(drizzle({ client }), { migrationsFolder: partial, migrationsTable: '__baton_migrations' });
    client.close();
    expect(snapshot(path).meta).toEqual([]);

    await createSqliteLedger({ path, pruneIntervalMs: 0 }).close();
    const state = snapshot(path);
    expect(state.migrations).toHaveLength(entries.length);
    expect(state.meta).toEqual([{ key: 'schema_version', value: String(SCHEMA_VERSION) }]);
  });

  it('upgrades a file at schema version 2 to parked requests and decisions, keeping its rows', async () => {
    const path = freshPath();
    const client = new Database(path);
    migrate(drizzle({ client }), {
      migrationsFolder: partialMigrations('sqlite', VERSION_2_MIGRATIONS, join(dir(), `v2-${n}`)),
      migrationsTable: '__baton_migrations',
    });
    for (const statement of VERSION_2_ROWS) client.exec(statement);
    client.close();
    const before = snapshot(path);
    expect(before.meta).toEqual([{ key: 'schema_version', value: '2' }]);
    const dump = (table: string) => {
      const db = new Database(path, { readonly: true });
      try {
        return db.prepare(`select * from ${table}`).all();
      } finally {
        db.close();
      }
    };
    const old = { tokens: dump('baton_tokens'), audit: dump('baton_audit') };

    const ledger = createSqliteLedger({ path, pruneIntervalMs: 0 });
    try {
      const after = snapshot(path);
      expect(after.meta).toEqual([{ key: 'schema_version', value: String(SCHEMA_VERSION) }]);
      expect(after.migrations).toHaveLength(journal('sqlite').entries.length);
      expect(after.migrations.slice(0, VERSION_2_MIGRATIONS)).toEqual(before.migrations);
      expect(after.redemptions).toEqual(before.redemptions);
      // Old rows are kept; schema 5's new audit columns are empty on them, schema 7's `via` reads `call`.
      const added = { args: null, principal_name: null, expires_at: null, via: 'call' };
      expect({ tokens: dump('baton_tokens'), audit: dump('baton_audit') }).toEqual({
        ...old,
        audit: old.audit.map((row) => ({ ...(row as object), ...added })),
      });
      expect(
        await ledger.redemptions.redeem({ jti: 'kept-jti', responsesDigest: 'd', expiresAt: T0 + 1000, now: T0 }),
      ).toEqual({
        status: 'retry',
        outcome: 'sealed',
      });
      expect(await ledger.requests.parkRequest(parked('R-1'), null)).toEqual({ status: 'parked', version: 1 });
      await ledger.decisions.requestDecisions([decisionRequest('R-1', 'manager_approval')]);
      expect(
        await ledger.decisions.recordDecision({
          id: 'R-1',
          key: 'manager_approval',
          decider: 'bob',
          content: 'c',
          now: T0,
          expectedVersion: 1,
        }),
      ).toEqual({ status: 'recorded', version: 2 });
    } finally {
      await ledger.close();
    }
  });

  it('upgrades a file at schema version 12 with outbox rows to their trace context, keeping them', async () => {
    const path = freshPath();
    const client = new Database(path);
    migrate(drizzle({ client }), {
      migrationsFolder: partialMigrations('sqlite', VERSION_12_MIGRATIONS, join(dir(), `v12-${n}`)),
      migrationsTable: '__baton_migrations',
    });
    for (const statement of VERSION_12_OUTBOX_ROWS) client.exec(statement);
    client.close();
    expect(snapshot(path).meta).toEqual([{ key: 'schema_version', value: '12' }]);
    const dump = () => {
      const db = new Database(path, { readonly: true });
      try {
        return db.prepare('select * from baton_outbox order by id').all();
      } finally {
        db.close();
      }
    };
    const old = dump();
    expect(old).toHaveLength(2);

    const ledger = createSqliteLedger({ path, pruneIntervalMs: 0 });
    try {
      expect(snapshot(path).meta).toEqual([{ key: 'schema_version', value: String(SCHEMA_VERSION) }]);
      // The rows are kept, with no trace context; the pending one is still handed out, without a traceparent.
      expect(dump()).toEqual(old.map((row) => ({ ...(row as object), trace_context: null })));
      const claimed = await ledger.outbox.claimOutbox({ now: T0 + 10, leaseUntil: T0 + 30_010, limit: 10 });
      expect(claimed).toEqual([
        { id: 'N-old-1', type: 'decision.requested', body: '{"a":1}', attempts: 0, createdAt: T0 },
      ]);
      const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
      await ledger.outbox.enqueueOutbox([{ id: 'N-new', type: 'decision.made', body: '{}', traceparent }], T0 + 20);
      expect(await ledger.outbox.claimOutbox({ now: T0 + 30, leaseUntil: T0 + 30_030, limit: 10 })).toEqual([
        { id: 'N-new', type: 'decision.made', body: '{}', traceparent, attempts: 0, createdAt: T0 + 20 },
      ]);
    } finally {
      await ledger.close();
    }
  });

  it('is refused by the previous Baton, which knew migrations up to schema version 2', async () => {
    const path = freshPath();
    await createSqliteLedger({ path, pruneIntervalMs: 0 }).close();
    const current = knownMigrations('sqlite');
    const previous = {
      ...current,
      count: VERSION_2_MIGRATIONS,
      newestMillis: journal('sqlite').entries[VERSION_2_MIGRATIONS - 1]!.when,
      newestTag: journal('sqlite').entries[VERSION_2_MIGRATIONS - 1]!.tag,
    };
    const client = new Database(path, { readonly: true });
    try {
      const state = readSchemaState(drizzle({ client }), 'x.db');
      expect(state.schemaVersion).toBe(SCHEMA_VERSION);
      expect(() => assertNotNewer(state, previous, 'x.db')).toThrow(
        /has a migration \(created_at \d+\) newer than the newest this version of @baton\/store knows \(0002_audit/,
      );
      expect(() => assertNotNewer(state, current, 'x.db')).not.toThrow();
    } finally {
      client.close();
    }
  });

  it('refuses a file with a newer schema version, and leaves it untouched', async () => {
    const path = freshPath();
    await createSqliteLedger({ path, pruneIntervalMs: 0 }).close();
    exec(path, `update baton_meta set value = '${SCHEMA_VERSION + 1}' where key = 'schema_version'`);
    const before = snapshot(path);
    expect(() => createSqliteLedger({ path, pruneIntervalMs: 0 })).toThrow(LedgerSchemaError);
    expect(() => createSqliteLedger({ path, pruneIntervalMs: 0 })).toThrow(
      new RegExp(`schema version ${SCHEMA_VERSION + 1}, newer than the ${SCHEMA_VERSION}.*not modified`),
    );
    expect(snapshot(path)).toEqual(before);
  });

  it('refuses a file with a migration newer than this code knows, and leaves it untouched', async () => {
    const path = freshPath();
    await createSqliteLedger({ path, pruneIntervalMs: 0 }).close();
    const future = journal('sqlite').entries.at(-1)!.when + 1;
    exec(path, `insert into __baton_migrations (hash, created_at) values ('from-the-future', ${future})`);
    const before = snapshot(path);
    expect(() => createSqliteLedger({ path, pruneIntervalMs: 0 })).toThrow(/newer than the newest .* knows/);
    expect(snapshot(path)).toEqual(before);
  });

  it('refuses an unreadable schema version', async () => {
    const path = freshPath();
    await createSqliteLedger({ path, pruneIntervalMs: 0 }).close();
    exec(path, "update baton_meta set value = 'banana' where key = 'schema_version'");
    expect(() => createSqliteLedger({ path, pruneIntervalMs: 0 })).toThrow(/unreadable schema_version "banana"/);
  });

  it('refuses a file that is not a SQLite database, with a clear error', () => {
    const path = freshPath();
    writeFileSync(path, 'this is not a database, just some text that is long enough to have a header at all');
    expect(() => createSqliteLedger({ path, pruneIntervalMs: 0 })).toThrow(LedgerError);
    expect(() => createSqliteLedger({ path, pruneIntervalMs: 0 })).toThrow(/SQLite ledger .*not a database/);
  });
});

describePg('PostgreSQL migrations', (serverUrl) => {
  let url = '';
  let drop: () => Promise<void> = async () => {};
  beforeAll(async () => {
    ({ url, drop } = await createTestDatabase(serverUrl));
  });
  afterAll(async () => drop());

  async function query<T = any>(text: string, target = url): Promise<T[]> {
    const client = new pg.Client({ connectionString: target });
    await client.connect();
    try {
      return (await client.query(text)).rows as T[];
    } finally {
      await client.end();
    }
  }

  const snapshot = async (target = url) => ({
    columns: await query(
      "select table_name, column_name, data_type, is_nullable from information_schema.columns where table_schema in ('public', 'drizzle') order by 1, 2",
      target,
    ),
    indexes: await query(
      "select indexname, indexdef from pg_indexes where schemaname in ('public', 'drizzle') order by 1",
      target,
    ),
    // xmin is the id of the transaction that last wrote a row: a rewrite would change it.
    migrations: await query(
      'select xmin::text, id, hash, created_at from drizzle.__baton_migrations order by id',
      target,
    ),
    meta: await query('select xmin::text, key, value from baton_meta order by key', target),
    redemptions: await query('select * from baton_redemptions order by jti', target),
  });

  it('creates every table, records each migration and the schema version on a fresh database', async () => {
    await (await createPostgresLedger({ connectionString: url, pruneIntervalMs: 0 })).close();
    const state = await snapshot();
    expect([...new Set(state.columns.map((c: any) => c.table_name))]).toEqual(
      expect.arrayContaining([
        'baton_meta',
        'baton_redemptions',
        'baton_tokens',
        'baton_audit',
        'baton_requests',
        'baton_decisions',
        '__baton_migrations',
      ]),
    );
    expect(state.indexes.map((i: any) => i.indexname)).toEqual(
      expect.arrayContaining([
        'baton_redemptions_expires_at_idx',
        'baton_tokens_expires_at_idx',
        'baton_requests_pkey',
        'baton_requests_requester_updated_at_idx',
        'baton_requests_expires_at_idx',
        'baton_decisions_pk',
        'baton_decisions_status_role_idx',
      ]),
    );
    expect(state.migrations.map((m: any) => Number(m.created_at))).toEqual(journal('pg').entries.map((e) => e.when));
    expect(state.meta).toEqual([{ xmin: expect.any(String), key: 'schema_version', value: String(SCHEMA_VERSION) }]);
  });

  it('keeps the rows of an existing database, and a second start changes nothing', async () => {
    const first = await createPostgresLedger({ connectionString: url, pruneIntervalMs: 0 });
    await first.redemptions.redeem({ jti: 'kept', responsesDigest: 'd', expiresAt: T0 + 1000, now: T0 });
    await first.redemptions.recordOutcome('kept', 'sealed');
    await first.close();
    const before = await snapshot();
    const second = await createPostgresLedger({ connectionString: url, pruneIntervalMs: 0 });
    await second.close();
    expect(await snapshot()).toEqual(before);
  });

  it('upgrades a database at schema version 2 to parked requests and decisions, keeping its rows', async () => {
    const fresh = await createTestDatabase(serverUrl);
    const scratch = mkdtempSync(join(tmpdir(), 'baton-v2-pg-'));
    try {
      const client = new pg.Client({ connectionString: fresh.url });
      await client.connect();
      try {
        await migratePg(drizzlePg({ client }), {
          migrationsFolder: partialMigrations('pg', VERSION_2_MIGRATIONS, scratch),
          migrationsTable: '__baton_migrations',
          migrationsSchema: 'drizzle',
        });
        for (const statement of VERSION_2_ROWS) await client.query(statement);
      } finally {
        await client.end();
      }
      const dump = async () => ({
        redemptions: await query('select * from baton_redemptions', fresh.url),
        tokens: await query('select * from baton_tokens', fresh.url),
        audit: await query('select * from baton_audit', fresh.url),
        migrations: await query('select id, hash, created_at from drizzle.__baton_migrations order by id', fresh.url),
      });
      const before = await dump();
      expect(await query('select value from baton_meta', fresh.url)).toEqual([{ value: '2' }]);
      expect(before.migrations).toHaveLength(VERSION_2_MIGRATIONS);

      const ledger = await createPostgresLedger({ connectionString: fresh.url, pruneIntervalMs: 0 });
      try {
        const after = await dump();
        expect(await query('select value from baton_meta', fresh.url)).toEqual([{ value: String(SCHEMA_VERSION) }]);
        expect(after.migrations).toHaveLength(journal('pg').entries.length);
        expect(after.migrations.slice(0, VERSION_2_MIGRATIONS)).toEqual(before.migrations);
        // Old rows are kept; schema 5's new audit columns are empty on them, schema 7's `via` reads `call`.
        const added = { args: null, principal_name: null, expires_at: null, via: 'call' };
        expect({ ...after, migrations: [] }).toEqual({
          ...before,
          audit: before.audit.map((row) => ({ ...(row as object), ...added })),
          migrations: [],
        });
        expect(
          await ledger.redemptions.redeem({ jti: 'kept-jti', responsesDigest: 'd', expiresAt: T0 + 1000, now: T0 }),
        ).toEqual({
          status: 'retry',
          outcome: 'sealed',
        });
        expect(await ledger.requests.parkRequest(parked('R-1'), null)).toEqual({ status: 'parked', version: 1 });
        await ledger.decisions.requestDecisions([decisionRequest('R-1', 'manager_approval')]);
        expect(
          await ledger.decisions.recordDecision({
            id: 'R-1',
            key: 'manager_approval',
            decider: 'bob',
            content: 'c',
            now: T0,
            expectedVersion: 1,
          }),
        ).toEqual({ status: 'recorded', version: 2 });
      } finally {
        await ledger.close();
      }
    } finally {
      rmSync(scratch, { recursive: true, force: true });
      await fresh.drop();
    }
  });

  it('upgrades a database at schema version 12 with outbox rows to their trace context, keeping them', async () => {
    const fresh = await createTestDatabase(serverUrl);
    const scratch = mkdtempSync(join(tmpdir(), 'baton-v12-pg-'));
    try {
      const client = new pg.Client({ connectionString: fresh.url });
      await client.connect();
      try {
        await migratePg(drizzlePg({ client }), {
          migrationsFolder: partialMigrations('pg', VERSION_12_MIGRATIONS, scratch),
          migrationsTable: '__baton_migrations',
          migrationsSchema: 'drizzle',
        });
        for (const statement of VERSION_12_OUTBOX_ROWS) await client.query(statement);
      } finally {
        await client.end();
      }
      expect(await query('select value from baton_meta', fresh.url)).toEqual([{ value: '12' }]);
      const dump = () => query('select * from baton_outbox order by id', fresh.url);
      const old = await dump();
      expect(old).toHaveLength(2);

      const ledger = await createPostgresLedger({ connectionString: fresh.url, pruneIntervalMs: 0 });
      try {
        expect(await query('select value from baton_meta', fresh.url)).toEqual([{ value: String(SCHEMA_VERSION) }]);
        expect(await dump()).toEqual(old.map((row) => ({ ...(row as object), trace_context: null })));
        const claimed = await ledger.outbox.claimOutbox({ now: T0 + 10, leaseUntil: T0 + 30_010, limit: 10 });
        expect(claimed).toEqual([
          { id: 'N-old-1', type: 'decision.requested', body: '{"a":1}', attempts: 0, createdAt: T0 },
        ]);
        const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
        await ledger.outbox.enqueueOutbox([{ id: 'N-new', type: 'decision.made', body: '{}', traceparent }], T0 + 20);
        expect(await ledger.outbox.claimOutbox({ now: T0 + 30, leaseUntil: T0 + 30_030, limit: 10 })).toEqual([
          { id: 'N-new', type: 'decision.made', body: '{}', traceparent, attempts: 0, createdAt: T0 + 20 },
        ]);
      } finally {
        await ledger.close();
      }
    } finally {
      rmSync(scratch, { recursive: true, force: true });
      await fresh.drop();
    }
  });

  it('refuses a database with a newer schema version, and leaves it untouched', async () => {
    const fresh = await createTestDatabase(serverUrl);
    try {
      await (await createPostgresLedger({ connectionString: fresh.url, pruneIntervalMs: 0 })).close();
      await query(`update baton_meta set value = '${SCHEMA_VERSION + 1}' where key = 'schema_version'`, fresh.url);
      const before = await snapshot(fresh.url);
      await expect(createPostgresLedger({ connectionString: fresh.url, pruneIntervalMs: 0 })).rejects.toThrow(
        new RegExp(`schema version ${SCHEMA_VERSION + 1}, newer than the ${SCHEMA_VERSION}.*not modified`),
      );
      expect(await snapshot(fresh.url)).toEqual(before);
    } finally {
      await fresh.drop();
    }
  });

  it('refuses a database with a migration newer than this code knows', async () => {
    const fresh = await createTestDatabase(serverUrl);
    try {
      await (await createPostgresLedger({ connectionString: fresh.url, pruneIntervalMs: 0 })).close();
      const future = journal('pg').entries.at(-1)!.when + 1;
      await query(
        `insert into drizzle.__baton_migrations (hash, created_at) values ('from-the-future', ${future})`,
        fresh.url,
      );
      await expect(createPostgresLedger({ connectionString: fresh.url, pruneIntervalMs: 0 })).rejects.toBeInstanceOf(
        LedgerSchemaError,
      );
      expect(await query('select count(*)::int as n from drizzle.__baton_migrations', fresh.url)).toEqual([
        { n: journal('pg').entries.length + 1 },
      ]);
    } finally {
      await fresh.drop();
    }
  });
});
