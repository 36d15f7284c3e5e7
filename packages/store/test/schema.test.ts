/**
 * The schema and its committed migrations stay in step: drizzle-kit finds
 * nothing to generate for either dialect, and both dialects define the same
 * logical tables, columns, nullability, primary keys and indexes (with their
 * columns).
 */
import { execFile } from 'node:child_process';
import { cpSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { getTableConfig as pgTableConfig } from 'drizzle-orm/pg-core';
import { getTableConfig as sqliteTableConfig } from 'drizzle-orm/sqlite-core';
import { describe, expect, it } from 'vitest';
import {
  audit as pgAudit,
  decisions as pgDecisions,
  meta as pgMeta,
  redemptions as pgRedemptions,
  requests as pgRequests,
  tokens as pgTokens,
} from '../src/schema/pg.js';
import {
  audit as sqliteAudit,
  decisions as sqliteDecisions,
  meta as sqliteMeta,
  redemptions as sqliteRedemptions,
  requests as sqliteRequests,
  tokens as sqliteTokens,
} from '../src/schema/sqlite.js';

const run = promisify(execFile);
const storeRoot = fileURLToPath(new URL('../', import.meta.url));

describe('ledger schema', () => {
  it.each([
    ['sqlite', 'sqlite', './src/schema/sqlite.ts'],
    ['pg', 'postgresql', './src/schema/pg.ts'],
  ])(
    'has committed %s migrations that match it (drizzle-kit generate finds nothing to do)',
    async (folder, dialect, schema) => {
      // drizzle-kit wants a relative --out; a scratch copy keeps the committed folder untouched.
      const scratch = `.tmp-drift-${folder}-${process.pid}`;
      cpSync(join(storeRoot, 'drizzle', folder), join(storeRoot, scratch), { recursive: true });
      try {
        const { stdout } = await run(
          join(storeRoot, 'node_modules/.bin/drizzle-kit'),
          ['generate', '--dialect', dialect, '--schema', schema, '--out', scratch],
          { cwd: storeRoot, timeout: 100_000 },
        );
        expect(stdout).toContain('No schema changes');
        expect(readdirSync(join(storeRoot, scratch)).sort()).toEqual(
          readdirSync(join(storeRoot, 'drizzle', folder)).sort(),
        );
      } finally {
        rmSync(join(storeRoot, scratch), { recursive: true, force: true });
      }
    },
    // drizzle-kit starts slowly on a loaded machine: well past the default 60 s, still bounded.
    120_000,
  );

  it('defines the same tables, columns, keys and indexes for SQLite and PostgreSQL', () => {
    // An index part is a column, or an expression over one (`updated_at desc`, `id collate "C"`).
    const indexedColumn = (part: unknown) =>
      (part as { name?: string }).name ??
      (part as { queryChunks: { name?: string }[] }).queryChunks.find((chunk) => typeof chunk?.name === 'string')?.name;
    const shape = (config: {
      name: string;
      columns: { name: string; notNull: boolean; primary: boolean }[];
      indexes: { config: { name?: string; columns: unknown[] } }[];
      primaryKeys: { columns: { name: string }[] }[];
    }) => ({
      name: config.name,
      columns: config.columns.map((c) => [c.name, c.notNull, c.primary]).sort(),
      indexes: config.indexes.map((i) => [i.config.name, i.config.columns.map(indexedColumn)]).sort(),
      primaryKeys: config.primaryKeys.map((pk) => pk.columns.map((c) => c.name)),
    });
    const pairs = [
      [sqliteRedemptions, pgRedemptions],
      [sqliteTokens, pgTokens],
      [sqliteMeta, pgMeta],
      [sqliteAudit, pgAudit],
      [sqliteRequests, pgRequests],
      [sqliteDecisions, pgDecisions],
    ] as const;
    for (const [sqlite, pg] of pairs) {
      expect(shape(sqliteTableConfig(sqlite))).toEqual(shape(pgTableConfig(pg)));
    }
  });
});
