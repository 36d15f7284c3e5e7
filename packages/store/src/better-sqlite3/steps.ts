/**
 * The SQLite ledger's `steps` facet: a durable step is claimed by an insert
 * or, when it exists, an `UPDATE` that matches only while it is ours or its
 * lease ended (of concurrent claimers exactly one matches), recorded once
 * while running, read, and reopened by an operator when it failed.
 */
import type { ClaimStep, ClaimStepResult, LedgerSteps, RecordStep, RecordStepResult, StepRecord } from '@baton/engine';
import { and, eq, lte, or, sql } from 'drizzle-orm';
import { claimParams } from '../core/params.js';
import { claimFailure, toStepRecord } from '../core/steps.js';
import { steps } from '../schema/sqlite.js';
import type { SqliteHandle } from './handle.js';

/** The `steps` facet over `handle`. */
export function sqliteSteps(handle: SqliteHandle): LedgerSteps {
  const { db, writes, assertOpen } = handle;
  const insertStep = db
    .insert(steps)
    .values({
      id: sql.placeholder('id'),
      key: sql.placeholder('key'),
      status: 'running',
      owner: sql.placeholder('owner'),
      leaseUntil: sql.placeholder('leaseUntil'),
      claims: 1,
      outcome: null,
      recordedAt: null,
      expiresAt: sql.placeholder('expiresAt'),
    })
    .onConflictDoNothing()
    .returning({ claims: steps.claims })
    .prepare();
  // Ours, or its lease ended: of concurrent claimers exactly one matches (the others then see its lease).
  const takeStep = db
    .update(steps)
    .set({
      claims: sql`${steps.claims} + (case when ${steps.owner} = ${sql.placeholder('owner')} then 0 else 1 end)`,
      owner: sql`${sql.placeholder('owner')}`,
      leaseUntil: sql`${sql.placeholder('leaseUntil')}`,
    })
    .where(
      and(
        eq(steps.id, sql.placeholder('id')),
        eq(steps.key, sql.placeholder('key')),
        eq(steps.status, 'running'),
        or(eq(steps.owner, sql.placeholder('owner')), lte(steps.leaseUntil, sql.placeholder('now'))),
      ),
    )
    .returning({ claims: steps.claims })
    .prepare();
  const finishStep = db
    .update(steps)
    .set({
      status: sql`${sql.placeholder('status')}`,
      outcome: sql`${sql.placeholder('outcome')}`,
      recordedAt: sql`${sql.placeholder('now')}`,
    })
    .where(and(eq(steps.id, sql.placeholder('id')), eq(steps.key, sql.placeholder('key')), eq(steps.status, 'running')))
    .returning({ key: steps.key })
    .prepare();
  // An operator's retry: a failed step back to running, unowned, its lease ended (the next claim takes it).
  const reopenStep = db
    .update(steps)
    .set({ status: 'running', owner: '', leaseUntil: 0, outcome: null, recordedAt: null })
    .where(and(eq(steps.id, sql.placeholder('id')), eq(steps.key, sql.placeholder('key')), eq(steps.status, 'failed')))
    .returning({ key: steps.key })
    .prepare();
  const selectStep = db
    .select()
    .from(steps)
    .where(and(eq(steps.id, sql.placeholder('id')), eq(steps.key, sql.placeholder('key'))))
    .prepare();

  return {
    async claimStep(claim: ClaimStep): Promise<ClaimStepResult> {
      assertOpen();
      const params = claimParams(claim);
      return writes.submit((): ClaimStepResult => {
        const inserted = insertStep.get(params);
        if (inserted !== undefined) return { status: 'claimed', claims: inserted.claims };
        const taken = takeStep.get(params);
        if (taken !== undefined) return { status: 'claimed', claims: taken.claims };
        return claimFailure(selectStep.get({ id: claim.id, key: claim.key }), claim.id, claim.key);
      });
    },

    async recordStep(record: RecordStep): Promise<RecordStepResult> {
      assertOpen();
      return writes.submit((): RecordStepResult => {
        if (finishStep.get({ ...record }) !== undefined) return { status: 'recorded' };
        const row = selectStep.get({ id: record.id, key: record.key });
        return row === undefined ? { status: 'unknown' } : { status: 'already_recorded', record: toStepRecord(row) };
      });
    },

    async getStep(id: string, key: string): Promise<StepRecord | undefined> {
      assertOpen();
      const row = selectStep.get({ id, key });
      return row === undefined ? undefined : toStepRecord(row);
    },

    async reopenStep(id: string, key: string, _now: number): Promise<boolean> {
      assertOpen();
      return writes.submit(() => reopenStep.get({ id, key }) !== undefined);
    },
  };
}
