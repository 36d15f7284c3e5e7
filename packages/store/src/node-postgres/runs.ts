/**
 * The PostgreSQL ledger's `runs` facet: what operators read (`baton runs`,
 * the inspector): parked requests of every requester, filtered and
 * keyset-paged newest first (ids in code point order), and one flow
 * instance's durable steps by key.
 */
import type { LedgerRuns, ParkedRequest, RunFilter, StepRecord } from '@baton/engine';
import { asc, desc, eq, sql } from 'drizzle-orm';
import { toParkedRequest } from '../core/requests.js';
import { runFilterWhere } from '../core/runFilter.js';
import { toStepRecord } from '../core/steps.js';
import { requests, steps } from '../schema/pg.js';
import { byCodePoint, type PostgresHandle } from './handle.js';

/** The `runs` facet over `handle`. */
export function postgresRuns(handle: PostgresHandle): LedgerRuns {
  const { db, assertOpen } = handle;
  return {
    async listRuns(filter: RunFilter): Promise<ParkedRequest[]> {
      assertOpen();
      const rows = await db
        .select()
        .from(requests)
        .where(runFilterWhere(requests, filter, (id) => sql`${byCodePoint(requests.id)} > ${id}`))
        .orderBy(desc(requests.updatedAt), asc(byCodePoint(requests.id)))
        .limit(filter.limit);
      return rows.map(toParkedRequest);
    },

    async listSteps(id: string): Promise<StepRecord[]> {
      assertOpen();
      const rows = await db
        .select()
        .from(steps)
        .where(eq(steps.id, id))
        .orderBy(asc(byCodePoint(steps.key)));
      return rows.map(toStepRecord);
    },
  };
}
