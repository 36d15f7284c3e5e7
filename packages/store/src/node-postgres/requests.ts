/**
 * The PostgreSQL ledger's `requests` facet: parked flow instances, created
 * by `INSERT ... ON CONFLICT DO NOTHING` and rewritten by a compare-and-set
 * `UPDATE ... WHERE version = expected` (concurrent writers with one version
 * queue on the row lock; the first commits, and the others' WHERE no longer
 * matches). A parked write that carries notifications or event waits writes
 * them in one transaction with it (`insertOutbox` from `outbox.ts`,
 * `replaceWaits` from `events.ts`); a rewrite without waits clears the old
 * ones in its own statement, batched with other such rewrites of the process
 * when batching is on (`rewriteBatches.ts`).
 */
import type { LedgerRequests, ParkedRequest, ParkRequest, ParkResult } from '@baton/engine';
import { and, asc, desc, eq, gte, sql } from 'drizzle-orm';
import { parkParams } from '../core/params.js';
import { toParkedRequest } from '../core/requests.js';
import { requests } from '../schema/pg.js';
import { replaceWaits } from './events.js';
import { byCodePoint, type PostgresHandle } from './handle.js';
import { insertOutbox } from './outbox.js';
import type { RewriteBatches } from './rewriteBatches.js';

/** The `requests` facet over `handle`, its plain rewrites through `batches` when given (`rewriteBatches.ts`). */
export function postgresRequests(handle: PostgresHandle, batches?: RewriteBatches): LedgerRequests {
  const { db, assertOpen } = handle;
  const insertRequest = db
    .insert(requests)
    .values({
      id: sql.placeholder('id'),
      flow: sql.placeholder('flow'),
      requester: sql.placeholder('requester'),
      requesterName: sql.placeholder('requesterName'),
      status: sql.placeholder('status'),
      waitingFor: sql.placeholder('waitingFor'),
      state: sql.placeholder('state'),
      version: 1,
      createdAt: sql.placeholder('now'),
      updatedAt: sql.placeholder('now'),
      expiresAt: sql.placeholder('expiresAt'),
      dueAt: sql.placeholder('dueAt'),
    })
    .onConflictDoNothing()
    .returning({ version: requests.version })
    .prepare('baton_park_insert');
  // Compare-and-set: the row is rewritten only if it still has the version the writer read.
  // Concurrent writers with one version queue on the row lock; the first commits, and the
  // others' WHERE no longer matches once re-checked against the new row.
  /**
   * A rewrite without event waits, one round trip: the compare-and-set update and, only when it
   * wrote, the removal of the waits an earlier version had (a data-modifying CTE: the delete sees
   * the statement's snapshot, so the waits a later writer commits are never removed).
   */
  const rewriteRequest = async (params: ReturnType<typeof parkParams>, expected: number) => {
    if (batches) {
      const version = await batches.rewrite(params, expected);
      return version === undefined ? [] : [{ version }];
    }
    const { rows } = await db.execute<{ version: number }>(sql`
      with written as (
        update baton_requests set flow = ${params.flow}, requester = ${params.requester},
          requester_name = ${params.requesterName}, status = ${params.status},
          waiting_for = ${params.waitingFor}, state = ${params.state}, version = version + 1,
          updated_at = ${params.now}, expires_at = ${params.expiresAt},
          -- Every write recomputes the next timer and ends a scheduler's claim.
          due_at = ${params.dueAt}, lease_owner = null, lease_until = null
        where id = ${params.id} and version = ${expected}
        returning version
      ), cleared as (
        delete from baton_event_waits where id = ${params.id} and exists (select 1 from written)
      )
      select version from written`);
    return rows.map((row) => ({ version: Number(row.version) }));
  };
  const selectRequest = db
    .select()
    .from(requests)
    .where(eq(requests.id, sql.placeholder('id')))
    .prepare('baton_request_select');
  const selectRequestsOf = db
    .select()
    .from(requests)
    .where(and(eq(requests.requester, sql.placeholder('requester')), gte(requests.updatedAt, sql.placeholder('since'))))
    .orderBy(desc(requests.updatedAt), asc(byCodePoint(requests.id)))
    .prepare('baton_requests_of');

  return {
    async parkRequest(request: ParkRequest, expectedVersion: number | null): Promise<ParkResult> {
      assertOpen();
      const params = parkParams(request);
      const messages = request.outbox ?? [];
      const waits = request.status === 'waiting' ? (request.events ?? []) : [];
      if (messages.length > 0 || waits.length > 0) {
        // The write, the notifications its round raised and its event waits: together or not at all.
        const written = await db.transaction(async (tx) => {
          const [row] =
            expectedVersion === null
              ? await tx
                  .insert(requests)
                  .values({
                    ...params,
                    version: 1,
                    createdAt: params.now,
                    updatedAt: params.now,
                  })
                  .onConflictDoNothing()
                  .returning({ version: requests.version })
              : await tx
                  .update(requests)
                  .set({
                    flow: params.flow,
                    requester: params.requester,
                    requesterName: params.requesterName,
                    status: params.status,
                    waitingFor: params.waitingFor,
                    state: params.state,
                    version: sql`${requests.version} + 1`,
                    updatedAt: params.now,
                    expiresAt: params.expiresAt,
                    dueAt: params.dueAt,
                    leaseOwner: null,
                    leaseUntil: null,
                  })
                  .where(and(eq(requests.id, params.id), eq(requests.version, expectedVersion)))
                  .returning({ version: requests.version });
          if (row !== undefined) {
            await insertOutbox(tx, messages, params.now);
            if (expectedVersion !== null || waits.length > 0) await replaceWaits(tx, params.id, params.flow, waits);
          }
          return row;
        });
        return written === undefined ? { status: 'conflict' } : { status: 'parked', version: written.version };
      }
      // A rewrite without waits ends any it had, in the same statement (`rewriteRequest`).
      const [written] =
        expectedVersion === null ? await insertRequest.execute(params) : await rewriteRequest(params, expectedVersion);
      if (written === undefined) return { status: 'conflict' };
      return { status: 'parked', version: written.version };
    },

    async getRequest(id: string): Promise<ParkedRequest | undefined> {
      assertOpen();
      const [row] = await selectRequest.execute({ id });
      return row === undefined ? undefined : toParkedRequest(row);
    },

    async listRequests(requester: string, since: number): Promise<ParkedRequest[]> {
      assertOpen();
      return (await selectRequestsOf.execute({ requester, since })).map(toParkedRequest);
    },
  };
}
