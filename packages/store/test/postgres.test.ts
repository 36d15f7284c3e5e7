/**
 * The shared Ledger contract against the PostgreSQL ledger on a real server
 * (started by the global setup), plus what is specific to PostgreSQL: fail
 * fast on an unreachable server without leaking the password, hashed token
 * codes, a caller-owned pool, several instances starting and redeeming at
 * once on one database, and listings ordered the same as on SQLite whatever
 * the database's collation.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Ledger } from '@baton/engine';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { knownMigrations } from '../src/core/migrations.js';
import { LedgerConnectionError, LedgerError, openLedger } from '../src/index.js';
import { createPostgresLedger } from '../src/node-postgres/index.js';
import { decisionRequest, newJti, parked, T0 } from './helpers/contract/fixtures.js';
import { describeLedgerContract } from './helpers/contract/index.js';
import { createTestDatabase, describePg, useTestDatabases } from './helpers/postgres.js';

describePg('postgres ledger', (serverUrl) => {
  let url = '';
  let drop: () => Promise<void> = async () => {};
  beforeAll(async () => {
    ({ url, drop } = await createTestDatabase(serverUrl));
  });
  afterAll(async () => drop());

  const databases = useTestDatabases(serverUrl);
  describeLedgerContract(
    'postgres',
    async (store) => createPostgresLedger({ connectionString: await databases(store), pruneIntervalMs: 0 }),
    { shared: true },
  );

  it('fails fast with a clear error, without the password, when the server is unreachable', async () => {
    const started = Date.now();
    // Fast means "does not sit out the connect timeout": a long timeout and a bound well under it,
    // so a loaded machine (which may take seconds to load the driver) cannot fail the test.
    const attempt = createPostgresLedger({
      connectionString: 'postgresql://baton:s3cret-pw@127.0.0.1:1/baton',
      connectTimeoutMs: 45_000,
    });
    await expect(attempt).rejects.toBeInstanceOf(LedgerConnectionError);
    const error = (await attempt.catch((e: unknown) => e)) as Error;
    expect(error.message).toMatch(
      /Cannot connect to the PostgreSQL ledger at postgresql:\/\/baton:\*\*\*@127\.0\.0\.1:1/,
    );
    expect(error.message).toMatch(/ECONNREFUSED/);
    expect(error.message).not.toContain('s3cret-pw');
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('fails with a clear error for a database that does not exist', async () => {
    const missing = new URL(serverUrl);
    missing.pathname = '/baton_no_such_database';
    await expect(createPostgresLedger({ connectionString: missing.toString() })).rejects.toThrow(
      /Cannot connect to the PostgreSQL ledger .*baton_no_such_database.*does not exist/,
    );
  });

  it('needs exactly one of connectionString or pool', async () => {
    await expect(createPostgresLedger({})).rejects.toBeInstanceOf(LedgerError);
  });

  it('stores only the sha256 of a token code', async () => {
    const ledger = await createPostgresLedger({ connectionString: url, pruneIntervalMs: 0 });
    const code = await ledger.redemptions.mintToken({
      purpose: 'hash-check',
      data: 'x',
      expiresAt: T0 + 1000,
      now: T0,
    });
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query("select * from baton_tokens where purpose = 'hash-check'");
    await client.end();
    expect(rows).toHaveLength(1);
    expect(rows[0].code_hash).toBe(createHash('sha256').update(code).digest('base64url'));
    expect(JSON.stringify(rows)).not.toContain(code);
    await ledger.close();
  });

  it('uses a caller-owned pool and leaves it open on close', async () => {
    const pool = new pg.Pool({ connectionString: url, max: 3 });
    const ledger = await createPostgresLedger({ pool, pruneIntervalMs: 0 });
    expect(
      await ledger.redemptions.redeem({ jti: newJti(), responsesDigest: 'd', expiresAt: T0 + 1, now: T0 }),
    ).toEqual({
      status: 'redeemed',
    });
    await ledger.close();
    expect((await pool.query('select 1 as one')).rows[0].one).toBe(1);
    await pool.end();
  });

  it('lets instances start together on a fresh database and agree on every redemption', {
    timeout: 30_000,
  }, async () => {
    const fresh = await createTestDatabase(serverUrl);
    const instances: Ledger[] = [];
    try {
      instances.push(
        ...(await Promise.all(
          Array.from({ length: 5 }, () =>
            createPostgresLedger({ connectionString: fresh.url, maxConnections: 4, pruneIntervalMs: 0 }),
          ),
        )),
      );
      const jtis = Array.from({ length: 100 }, newJti);
      const results = await Promise.all(
        jtis.flatMap((jti) =>
          instances.map((ledger) =>
            ledger.redemptions.redeem({ jti, responsesDigest: 'd', expiresAt: T0 + 1000, now: T0 }),
          ),
        ),
      );
      expect(results.filter((r) => r.status === 'redeemed')).toHaveLength(jtis.length);
      expect(results.filter((r) => r.status === 'in_progress')).toHaveLength(jtis.length * (instances.length - 1));
      const client = new pg.Client({ connectionString: fresh.url });
      await client.connect();
      const migrations = await client.query('select count(*)::int as n from drizzle.__baton_migrations');
      await client.end();
      expect(migrations.rows[0].n).toBe(knownMigrations('pg').count);
    } finally {
      await Promise.all(instances.map((ledger) => ledger.close()));
      await fresh.drop();
    }
  });

  it('orders listings by code point on a database whose collation sorts otherwise', async () => {
    // ICU's en-US order puts "alpha" before "Zeta" and "a" before "B"; SQLite and the memory
    // ledger put capitals first. The ledger must not depend on the database's collation.
    const name = `baton_t_icu_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
    try {
      await admin.query(
        `CREATE DATABASE ${name} TEMPLATE template0 ENCODING 'UTF8' LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C'`,
      );
    } finally {
      await admin.end();
    }
    const icuUrl = new URL(serverUrl);
    icuUrl.pathname = `/${name}`;
    try {
      const client = new pg.Client({ connectionString: icuUrl.toString() });
      await client.connect();
      const { rows } = await client.query(`select 'a' < 'B' as icu, 'a' < 'B' collate "C" as bytes`);
      await client.end();
      expect(rows[0]).toEqual({ icu: true, bytes: false });

      const ledger = await createPostgresLedger({ connectionString: icuUrl.toString(), pruneIntervalMs: 0 });
      try {
        await ledger.decisions.requestDecisions([decisionRequest('R-1', 'alpha'), decisionRequest('R-1', 'Zeta')]);
        expect((await ledger.decisions.listDecisions({ id: 'R-1' })).map((d) => d.key)).toEqual(['Zeta', 'alpha']);
        await ledger.requests.parkRequest(parked('R-a'), null);
        await ledger.requests.parkRequest(parked('R-B'), null);
        expect((await ledger.requests.listRequests('hash-alice', 0)).map((r) => r.id)).toEqual(['R-B', 'R-a']);
      } finally {
        await ledger.close();
      }
    } finally {
      const client = new pg.Client({ connectionString: serverUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    }
  });

  it('is what openLedger("postgres://...") opens', async () => {
    const ledger = await openLedger(url.replace(/^postgresql:/, 'postgres:'), { pruneIntervalMs: 0 });
    const jti = newJti();
    expect(await ledger.redemptions.redeem({ jti, responsesDigest: 'd', expiresAt: T0 + 1, now: T0 })).toEqual({
      status: 'redeemed',
    });
    await ledger.close();
  });
});
