/**
 * The PostgreSQL audit log on node-postgres, on the ledger's database: the
 * `baton_audit` table, created by the ledger's migrations at start-up (under
 * the same advisory lock, so instances starting together do not collide).
 * An append is one `INSERT ... ON CONFLICT (fid, round) DO NOTHING`; when the
 * round's number is taken, the entry is either a retried append (the same
 * instance, start, principal and call: ignored, so a retried round never adds
 * a second entry, whichever instance serves it) or another call's round of
 * the instance (a decider's, say), inserted after the instance's last entry
 * (again on a conflict: two such appends racing each get their own number).
 * Opening connects and migrates at once: an unreachable database fails at
 * start-up, not in a round. Statements are prepared (named `baton_audit_*`,
 * distinct from the ledger's, so both may share one pool).
 */
import type { AuditEntry, AuditInstance } from '@baton/engine';
import { and, asc, desc, eq, sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import {
  AUDIT_RENUMBER_ATTEMPTS,
  AUDIT_ROW_PLACEHOLDERS,
  type AuditLogOptions,
  type AuditRow,
  fromAuditRow,
  instancesQuery,
  reportAppendFailure,
  type StoreAuditLog,
  startAuditPruning,
  toAuditInstance,
  toAuditRow,
} from '../core/audit.js';
import { LedgerError } from '../core/errors.js';
import { audit } from '../schema/pg.js';
import { connectPostgres, type PostgresConnectionOptions } from './connect.js';

/**
 * Options for the audit log: give `connectionString` or `pool`, not both
 * (a pool created from the URL has 4 connections unless `maxConnections` says otherwise).
 */
export interface PostgresAuditLogOptions extends AuditLogOptions, PostgresConnectionOptions {}

/** The transaction lock (two-key form, 'audi' and the fid's hash) renumbering appends of one instance take. */
const RENUMBER_LOCK = sql`1635083369`;

/** Rows deleted per statement by `prune`. */
const PRUNE_BATCH = 5000;

/**
 * Connect to PostgreSQL, migrate when needed, and return the audit log.
 *
 * Rejects with a `LedgerConnectionError` when the server cannot be reached and a
 * `LedgerSchemaError` when the database was migrated by a newer Baton.
 *
 * @example
 * ```ts
 * import { createPostgresAuditLog } from '@baton/store/node-postgres';
 *
 * const audit = await createPostgresAuditLog({ connectionString: process.env.DATABASE_URL });
 * ```
 */
export async function createPostgresAuditLog(options: PostgresAuditLogOptions): Promise<StoreAuditLog> {
  const connection = await connectPostgres(options, {
    what: 'audit log',
    factory: 'createPostgresAuditLog',
    defaultMaxConnections: 4,
    applicationName: 'baton-audit',
  });
  const { pool, where } = connection;

  const db = drizzle({ client: pool });
  const insert = db
    .insert(audit)
    .values(AUDIT_ROW_PLACEHOLDERS)
    .onConflictDoNothing()
    .returning({ round: audit.round })
    .prepare('baton_audit_append');
  const selectRounds = db
    .select()
    .from(audit)
    .where(eq(audit.fid, sql.placeholder('fid')))
    .orderBy(asc(audit.round))
    .prepare('baton_audit_rounds');
  // Ties on last_at are broken by fid in byte order (collation "C"), as on SQLite and in memory.
  const selectInstances = (byFlow: boolean) => {
    const groups = db
      .select({
        fid: audit.fid,
        rounds: sql<string>`count(*)`.as('rounds'),
        firstAt: sql<string>`min(${audit.at})`.as('first_at'),
        lastAt: sql<string>`max(${audit.at})`.as('last_at'),
        lastRound: sql<number>`max(${audit.round})`.as('last_round'),
      })
      .from(audit)
      .where(byFlow ? eq(audit.flow, sql.placeholder('flow')) : undefined)
      .groupBy(audit.fid)
      .orderBy(desc(sql`last_at`), sql`${audit.fid} collate "C" desc`)
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
      .orderBy(desc(groups.lastAt), sql`${groups.fid} collate "C" desc`)
      .prepare(byFlow ? 'baton_audit_instances_flow' : 'baton_audit_instances');
  };
  /**
   * The number is taken: a retry of this very entry (ignored), or another call's round, inserted
   * after the instance's last entry. Renumbering appends of one instance take turns (a transaction
   * lock on its fid), so a retry racing its original is still seen as one.
   */
  async function renumber(row: AuditRow): Promise<void> {
    await db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(${RENUMBER_LOCK}, hashtext(${row.fid}))`);
      for (let attempt = 0; attempt < AUDIT_RENUMBER_ATTEMPTS; attempt++) {
        const retried = await tx
          .select({ round: audit.round })
          .from(audit)
          .where(
            and(
              eq(audit.fid, row.fid),
              eq(audit.at, row.at),
              eq(audit.principal, row.principal),
              eq(audit.via, row.via),
            ),
          )
          .limit(1);
        if (retried.length > 0) return;
        const [last] = await tx
          .select({ round: sql<number | null>`max(${audit.round})` })
          .from(audit)
          .where(eq(audit.fid, row.fid));
        row.round = Number(last?.round ?? 0) + 1;
        const inserted = await tx.insert(audit).values(row).onConflictDoNothing().returning({ round: audit.round });
        if (inserted.length > 0) return;
      }
      throw new LedgerError(`the audit entry kept losing its round number over ${AUDIT_RENUMBER_ATTEMPTS} attempts`);
    });
  }

  const selectAllInstances = selectInstances(false);
  const selectFlowInstances = selectInstances(true);

  const log: StoreAuditLog = {
    async append(entry: AuditEntry): Promise<void> {
      try {
        assertOpen();
        const row = toAuditRow(entry);
        if ((await insert.execute(row)).length > 0) return;
        await renumber(row);
      } catch (error) {
        reportAppendFailure(error, entry, options);
      }
    },

    async instances(query?: { flow?: string; limit?: number }): Promise<AuditInstance[]> {
      assertOpen();
      const { flow, limit } = instancesQuery(query);
      if (limit === 0) return [];
      const rows =
        flow === undefined
          ? await selectAllInstances.execute({ limit })
          : await selectFlowInstances.execute({ flow, limit });
      return rows.map(toAuditInstance);
    },

    async rounds(fid: string): Promise<AuditEntry[]> {
      assertOpen();
      return (await selectRounds.execute({ fid })).map(fromAuditRow);
    },

    async prune(before: number): Promise<number> {
      assertOpen();
      let removed = 0;
      for (;;) {
        if (connection.closed) return removed;
        // SKIP LOCKED: instances pruning at the same moment take disjoint batches instead of queueing.
        const result = await db.execute(
          sql`delete from ${audit} where ctid = any(array(select ctid from ${audit} where ${audit.at} < ${before} limit ${PRUNE_BATCH} for update skip locked))`,
        );
        const count = result.rowCount ?? 0;
        removed += count;
        if (count < PRUNE_BATCH) return removed;
      }
    },

    async close(): Promise<void> {
      if (connection.closed) return;
      await schedule.stop();
      await connection.close();
    },
  };

  const schedule = startAuditPruning((before) => log.prune(before), options);
  return log;

  function assertOpen(): void {
    if (connection.closed) throw new LedgerError(`The PostgreSQL audit log ${where} is closed`);
  }
}

/** A printable description of a caller's pool (no password). */
