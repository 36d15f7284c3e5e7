/**
 * The SQLite ledger's `requests` facet: parked flow instances, created by
 * `INSERT ... ON CONFLICT DO NOTHING` and rewritten by a compare-and-set
 * `UPDATE ... WHERE version = expected` (which also recomputes the timer and
 * ends a scheduler's claim). A parked write that carries notifications or
 * event waits writes them in one transaction with it, through the outbox and
 * event-wait writers it is given (`outbox.ts`, `events.ts`).
 */
import type { EventWait, LedgerRequests, OutboxMessage, ParkedRequest, ParkRequest, ParkResult } from '@baton/engine';
import { and, asc, desc, eq, gte, sql } from 'drizzle-orm';
import { parkParams } from '../core/params.js';
import { toParkedRequest } from '../core/requests.js';
import { requests } from '../schema/sqlite.js';
import type { SqliteHandle } from './handle.js';

/** The writes a parked write makes besides its own row (inside its transaction). */
export interface SqliteParkWrites {
  /** Insert notifications (see `sqliteOutboxWriter`). */
  insertOutbox(messages: readonly OutboxMessage[], now: number): void;
  /** Replace a request's event waits (see `sqliteEventWaits`). */
  replaceWaits(id: string, flow: string, list: readonly EventWait[]): void;
}

/** The `requests` facet over `handle`. */
export function sqliteRequests(handle: SqliteHandle, park: SqliteParkWrites): LedgerRequests {
  const { client, db, writes, assertOpen } = handle;
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
    .prepare();
  // Compare-and-set: the row is rewritten only if it still has the version the writer read.
  const updateRequest = db
    .update(requests)
    .set({
      flow: sql`${sql.placeholder('flow')}`,
      requester: sql`${sql.placeholder('requester')}`,
      requesterName: sql`${sql.placeholder('requesterName')}`,
      status: sql`${sql.placeholder('status')}`,
      waitingFor: sql`${sql.placeholder('waitingFor')}`,
      state: sql`${sql.placeholder('state')}`,
      version: sql`${requests.version} + 1`,
      updatedAt: sql`${sql.placeholder('now')}`,
      expiresAt: sql`${sql.placeholder('expiresAt')}`,
      // Every write recomputes the next timer and ends a scheduler's claim.
      dueAt: sql`${sql.placeholder('dueAt')}`,
      leaseOwner: null,
      leaseUntil: null,
    })
    .where(and(eq(requests.id, sql.placeholder('id')), eq(requests.version, sql.placeholder('expected'))))
    .returning({ version: requests.version })
    .prepare();
  const selectRequest = db
    .select()
    .from(requests)
    .where(eq(requests.id, sql.placeholder('id')))
    .prepare();
  const selectRequestsOf = db
    .select()
    .from(requests)
    .where(and(eq(requests.requester, sql.placeholder('requester')), gte(requests.updatedAt, sql.placeholder('since'))))
    .orderBy(desc(requests.updatedAt), asc(requests.id))
    .prepare();
  /** A parked write, the notifications its round raised and its event waits: together or not at all. */
  const parkWithOutbox = client.transaction(
    (write: () => { version: number } | undefined, request: ParkRequest, hadWaits: boolean) => {
      const written = write();
      if (written === undefined) return written;
      if (request.outbox && request.outbox.length > 0) park.insertOutbox(request.outbox, request.now);
      const waits = request.status === 'waiting' ? (request.events ?? []) : [];
      if (hadWaits || waits.length > 0) park.replaceWaits(request.id, request.flow, waits);
      return written;
    },
  );

  return {
    async parkRequest(request: ParkRequest, expectedVersion: number | null): Promise<ParkResult> {
      assertOpen();
      const params = parkParams(request);
      const write = () =>
        expectedVersion === null
          ? insertRequest.get(params)
          : updateRequest.get({ ...params, expected: expectedVersion });
      // A rewrite replaces the event waits (there may be some); a first write only adds its own.
      const hadWaits = expectedVersion !== null;
      const simple = (request.outbox ?? []).length === 0 && !hadWaits && (request.events ?? []).length === 0;
      const written = await writes.submit(() =>
        simple ? write() : parkWithOutbox.immediate(write, request, hadWaits),
      );
      return written === undefined ? { status: 'conflict' } : { status: 'parked', version: written.version };
    },

    async getRequest(id: string): Promise<ParkedRequest | undefined> {
      assertOpen();
      const row = selectRequest.get({ id });
      return row === undefined ? undefined : toParkedRequest(row);
    },

    async listRequests(requester: string, since: number): Promise<ParkedRequest[]> {
      assertOpen();
      return selectRequestsOf.all({ requester, since }).map(toParkedRequest);
    },
  };
}
