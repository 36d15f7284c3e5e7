/**
 * PostgreSQL helpers for the store's tests: the server URL provided by the
 * global setup, a `describe` that skips (locally, with the reason) or fails
 * (CI) without it, and throwaway databases so every suite starts from an
 * empty schema.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, inject } from 'vitest';

const inCi = process.env.CI === 'true' || process.env.CI === '1';

/** The test server's URL, or undefined when PostgreSQL tests cannot run here. */
export function pgUrl(): string | undefined {
  return inject('batonPgUrl') || process.env.BATON_TEST_PG_URL || undefined;
}

/** Why PostgreSQL tests are skipped. */
function skipReason(): string {
  return (
    inject('batonPgSkipReason') ||
    'no PostgreSQL: set BATON_TEST_PG_URL or add packages/store/test/setup/postgres.ts to globalSetup in vitest.config.ts'
  );
}

/**
 * `describe` for PostgreSQL suites: runs when a server is available, is skipped
 * locally with the reason printed, and fails under CI.
 */
export function describePg(name: string, body: (url: string) => void): void {
  const url = pgUrl();
  if (url) {
    describe(name, () => body(url));
    return;
  }
  if (inCi) {
    describe(name, () => {
      throw new Error(`PostgreSQL is required under CI: ${skipReason()}`);
    });
    return;
  }
  console.warn(`[baton/store] skipping "${name}": ${skipReason()}`);
  describe.skip(name, () => body(''));
}

/** A fresh, empty database on the test server; `drop()` removes it (closing stray connections). */
export async function createTestDatabase(baseUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `baton_t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: baseUrl });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * One test database per store name, created on first use and dropped after the suite (call it
 * inside a `describe`): `(await databases('votes'))` is the same URL every time it is asked.
 */
export function useTestDatabases(baseUrl: string): (store: string) => Promise<string> {
  const created = new Map<string, Promise<{ url: string; drop: () => Promise<void> }>>();
  afterAll(async () => {
    for (const database of created.values()) await (await database).drop();
  });
  return async (store) => {
    let database = created.get(store);
    if (database === undefined) {
      database = createTestDatabase(baseUrl);
      created.set(store, database);
    }
    return (await database).url;
  };
}
