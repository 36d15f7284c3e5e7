/**
 * The SQLite audit log on better-sqlite3, in the ledger's file (or any other):
 * the `baton_audit` table, created by the ledger's migrations at start-up.
 * An append is one `INSERT ... ON CONFLICT (fid, round) DO NOTHING`; when the
 * round's number is taken, the entry is either a retried append (the same
 * instance, start, principal and call: ignored, so a retried round never adds
 * a second entry) or another call's round of the instance (a decider's, say),
 * numbered after the instance's last entry in the same transaction. Appends of
 * one event-loop turn share a commit. Reads are prepared statements over the primary key
 * (`rounds`) and the `(flow, at)` / `at` indexes (`instances`, `prune`).
 */
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { AuditEntry, AuditInstance } from '@baton/engine';
import { and, asc, desc, eq, sql } from 'drizzle-orm';
import {
  AUDIT_ROW_PLACEHOLDERS,
  type AuditLogOptions,
  fromAuditRow,
  instancesQuery,
  reportAppendFailure,
  type StoreAuditLog,
  startAuditPruning,
  toAuditInstance,
  toAuditRow,
} from '../core/audit.js';
import { LedgerError } from '../core/errors.js';
import { audit } from '../schema/sqlite.js';
import { openMigratedSqlite } from './file.js';
import { WriteBatcher } from './writeBatcher.js';

/** Options for {@link createSqliteAuditLog}. */
export interface SqliteAuditLogOptions extends AuditLogOptions {
  /** The database file (normally the ledger's); created (with its folder) when missing. */
  readonly path: string;
  /** How long a writer waits for another connection's write lock, in ms. Default 5000. */
  readonly busyTimeoutMs?: number;
}

/** Rows deleted per statement by `prune`. */
const PRUNE_BATCH = 2000;

/**
 * Open (creating and migrating when needed) the audit log in the SQLite file at `options.path`.
 *
 * @example
 * ```ts
 * import { createSqliteAuditLog } from '@baton/store/better-sqlite3';
 *
 * const audit = createSqliteAuditLog({ path: './data/baton-ledger.db' });
 * ```
 */
export function createSqliteAuditLog(options: SqliteAuditLogOptions): StoreAuditLog {
  const { client, db, where } = openMigratedSqlite(options, {
    factory: 'createSqliteAuditLog',
    what: 'SQLite audit log',
  });

  const insert = db.insert(audit).values(AUDIT_ROW_PLACEHOLDERS).onConflictDoNothing().prepare();
  // A retried append: an entry of the instance with the same start, principal and call.
  const selectRetried = db
    .select({ round: audit.round })
    .from(audit)
    .where(
      and(
        eq(audit.fid, sql.placeholder('fid')),
        eq(audit.at, sql.placeholder('at')),
        eq(audit.principal, sql.placeholder('principal')),
        eq(audit.via, sql.placeholder('via')),
      ),
    )
    .limit(1)
    .prepare();
  const selectLastRound = db
    .select({ round: sql<number | null>`max(${audit.round})` })
    .from(audit)
    .where(eq(audit.fid, sql.placeholder('fid')))
    .prepare();
  const selectRounds = db
    .select()
    .from(audit)
    .where(eq(audit.fid, sql.placeholder('fid')))
    .orderBy(asc(audit.round))
    .prepare();
  const selectInstances = (byFlow: boolean) => {
    const groups = db
      .select({
        fid: audit.fid,
        rounds: sql<number>`count(*)`.as('rounds'),
        firstAt: sql<number>`min(${audit.at})`.as('first_at'),
        lastAt: sql<number>`max(${audit.at})`.as('last_at'),
        lastRound: sql<number>`max(${audit.round})`.as('last_round'),
      })
      .from(audit)
      .where(byFlow ? eq(audit.flow, sql.placeholder('flow')) : undefined)
      .groupBy(audit.fid)
      .orderBy(desc(sql`last_at`), desc(audit.fid))
      .limit(sql.placeholder('limit'))
      .as('g');
    return db
      .select({
        fid: groups.fid,
        flow: audit.flow,
        rounds: groups.rounds,
        firstAt: groups.firstAt,
        lastAt: groups.lastAt,
        lastOutcome: audit.outcome,
      })
      .from(groups)
      .innerJoin(audit, sql`${audit.fid} = ${groups.fid} and ${audit.round} = ${groups.lastRound}`)
      .orderBy(desc(groups.lastAt), desc(groups.fid))
      .prepare();
  };
  const selectAllInstances = selectInstances(false);
  const selectFlowInstances = selectInstances(true);
  const pruneBatch = client.prepare(
    'delete from baton_audit where rowid in (select rowid from baton_audit where at < ? limit ?)',
  );

  const writes = new WriteBatcher(client);
  let closed = false;

  const log: StoreAuditLog = {
    async append(entry: AuditEntry): Promise<void> {
      try {
        assertOpen();
        const row = toAuditRow(entry);
        // One transaction (the batch's): the number taken and the renumbered insert cannot interleave.
        await writes.submit(() => {
          if (insert.run(row).changes > 0) return;
          const { fid, at, principal, via } = row;
          if (selectRetried.get({ fid, at, principal, via })) return;
          const last = selectLastRound.get({ fid: row.fid })?.round ?? 0;
          insert.run({ ...row, round: Number(last) + 1 });
        });
      } catch (error) {
        reportAppendFailure(error, entry, options);
      }
    },

    async instances(query?: { flow?: string; limit?: number }): Promise<AuditInstance[]> {
      assertOpen();
      const { flow, limit } = instancesQuery(query);
      if (limit === 0) return [];
      const rows = flow === undefined ? selectAllInstances.all({ limit }) : selectFlowInstances.all({ flow, limit });
      return rows.map(toAuditInstance);
    },

    async rounds(fid: string): Promise<AuditEntry[]> {
      assertOpen();
      return selectRounds.all({ fid }).map(fromAuditRow);
    },

    async prune(before: number): Promise<number> {
      assertOpen();
      let removed = 0;
      for (;;) {
        if (closed) return removed;
        const { changes } = pruneBatch.run(before, PRUNE_BATCH);
        removed += changes;
        if (changes < PRUNE_BATCH) return removed;
        await yieldToEventLoop();
      }
    },

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await schedule.stop();
      writes.flush();
      client.close();
    },
  };

  const schedule = startAuditPruning((before) => log.prune(before), options);
  return log;

  function assertOpen(): void {
    if (closed) throw new LedgerError(`The SQLite audit log ${where} is closed`);
  }
}
