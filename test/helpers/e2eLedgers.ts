/**
 * What the end-to-end files that run `baton serve` on both ledgers share: a
 * scratch folder removed after the file, a bearer-token file for named
 * principals (`--auth-tokens`), the ledgers a file runs its `describe.each`
 * over (a SQLite file in the scratch folder, then PostgreSQL when the suite's
 * global setup started it) and, for PostgreSQL, a database of the file's own
 * on that cluster, so that the schedulers of other files' servers never fire
 * this file's timers, deliver its outbox or route its events. The race files'
 * in-process runners share a ledger of the same two kinds ({@link sharedLedgerKinds}).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FullLedger } from '@baton/engine';
import { createSqliteLedger } from '@baton/store/better-sqlite3';
import { createPostgresLedger } from '@baton/store/node-postgres';
import { afterAll, inject } from 'vitest';
import { createTestDatabase } from '../../packages/store/test/helpers/postgres.js';

/** A scratch folder for this test file, removed after its last test. */
export function scratchDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `baton-${prefix}-`));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** What `--auth-tokens` maps a bearer token to. */
export interface TokenPrincipal {
  readonly principal: string;
  readonly roles?: readonly string[];
  readonly scopes?: readonly string[];
  /** A display name (`DecisionCaller.displayName`). */
  readonly name?: string;
}

/** The bearer token of principal `name` in a file written by {@link writeTokens}. */
export const tokenOf = (name: string) => `${name}-token-${'x'.repeat(24)}`;

/**
 * Write `dir/tokens.json` for `--auth-tokens`, one token per entry (see {@link tokenOf}:
 * `tokenOf('bob')` is the token of entry `bob`); returns its path.
 */
export function writeTokens(dir: string, principals: Record<string, TokenPrincipal>): string {
  const file = join(dir, 'tokens.json');
  const entries = Object.entries(principals).map(([name, entry]) => [tokenOf(name), entry]);
  writeFileSync(file, JSON.stringify(Object.fromEntries(entries)));
  return file;
}

/**
 * The ledgers of a `describe.each`: `['SQLite', 'sqlite:<dir>/ledger.db']`, then
 * `['PostgreSQL', <the suite's cluster URL>]`, whose URL is `undefined` when the suite runs
 * without PostgreSQL (its cases skip).
 */
export function e2eLedgers(dir: string): [string, string | undefined][] {
  const pgUrl = inject('batonPgUrl');
  return [
    ['SQLite', `sqlite:${join(dir, 'ledger.db')}`],
    ['PostgreSQL', pgUrl || undefined],
  ];
}

/**
 * The ledger URL one `describe` block serves from: a SQLite URL as given, and for PostgreSQL a
 * fresh database on the suite's cluster, with the function that drops it (call it after the
 * block's servers stopped).
 */
export async function ledgerOfItsOwn(
  name: string,
  given: string,
): Promise<{ readonly url: string; readonly drop: () => Promise<void> }> {
  if (name !== 'PostgreSQL') return { url: given, drop: async () => {} };
  return createTestDatabase(given);
}

/** A fresh ledger that several in-process runners open together (`open` once per runner), and how to drop it. */
export interface SharedLedger {
  readonly open: () => Promise<FullLedger>;
  readonly drop: () => Promise<void>;
}

/**
 * The ledgers of an in-process race `describe.each`: a new SQLite file in `dir` each time, then a
 * new database on the suite's PostgreSQL (`undefined` without it: its cases skip).
 */
export function sharedLedgerKinds(dir: string): [string, (() => Promise<SharedLedger>) | undefined][] {
  const pgUrl = inject('batonPgUrl');
  return [
    [
      'SQLite file',
      async () => {
        const path = join(dir, `ledger-${Math.random().toString(36).slice(2)}.db`);
        return { open: async () => createSqliteLedger({ path, pruneIntervalMs: 0 }), drop: async () => {} };
      },
    ],
    [
      'PostgreSQL',
      pgUrl
        ? async () => {
            const database = await createTestDatabase(pgUrl);
            return {
              open: () => createPostgresLedger({ connectionString: database.url, pruneIntervalMs: 0 }),
              drop: database.drop,
            };
          }
        : undefined,
    ],
  ];
}
