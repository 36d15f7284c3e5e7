/**
 * The SQLite ledger's `runs` facet: what operators read (`baton runs`, the
 * inspector): parked requests of every requester, filtered and keyset-paged
 * newest first, and one flow instance's durable steps by key.
 */
import type { LedgerRuns, ParkedRequest, RunFilter, StepRecord } from '@baton/engine';
import { asc, desc, eq, gt } from 'drizzle-orm';
import { toParkedRequest } from '../core/requests.js';
import { runFilterWhere } from '../core/runFilter.js';
import { toStepRecord } from '../core/steps.js';
import { requests, steps } from '../schema/sqlite.js';
import type { SqliteHandle } from './handle.js';

/** The `runs` facet over `handle`. */
export function sqliteRuns(handle: SqliteHandle): LedgerRuns {
  const { db, assertOpen } = handle;
  return {
    async listRuns(filter: RunFilter): Promise<ParkedRequest[]> {
      assertOpen();
      return db
        .select()
        .from(requests)
        .where(runFilterWhere(requests, filter, (id) => gt(requests.id, id)))
        .orderBy(desc(requests.updatedAt), asc(requests.id))
        .limit(filter.limit)
        .all()
        .map(toParkedRequest);
    },

    async listSteps(id: string): Promise<StepRecord[]> {
      assertOpen();
      return db.select().from(steps).where(eq(steps.id, id)).orderBy(asc(steps.key)).all().map(toStepRecord);
    },
  };
}
