/**
 * The engine's `RunFilter` (what `baton runs list` asks for) as one drizzle
 * condition over a driver's `baton_requests` columns, so SQLite and
 * PostgreSQL list the same runs in the same order: newest write first, then
 * by id, paged by keyset (the rows after the last one shown). The condition
 * is dialect-neutral but for the id comparison, which a driver passes in
 * (PostgreSQL compares by code point, as it orders). Both drivers read it
 * from the index `baton_requests_updated_at_id_idx` (schema 10) in that order.
 */
import type { RunFilter } from '@baton/engine';
import { and, type Column, eq, gte, lt, lte, or, type SQL } from 'drizzle-orm';

/** The `baton_requests` columns the filter reads: a driver passes its table. */
export interface RunFilterColumns {
  readonly id: Column;
  readonly flow: Column;
  readonly status: Column;
  readonly requester: Column;
  readonly requesterName: Column;
  readonly createdAt: Column;
  readonly updatedAt: Column;
}

/** The `where` of `listRuns`; `idAfter(id)` is the driver's "id sorts after `id`" condition. */
export function runFilterWhere(
  columns: RunFilterColumns,
  filter: RunFilter,
  idAfter: (id: string) => SQL,
): SQL | undefined {
  const conditions: SQL[] = [];
  if (filter.flow !== undefined) conditions.push(eq(columns.flow, filter.flow));
  if (filter.status !== undefined) conditions.push(eq(columns.status, filter.status));
  if (filter.requester !== undefined) {
    conditions.push(or(eq(columns.requester, filter.requester), eq(columns.requesterName, filter.requester))!);
  }
  if (filter.updatedSince !== undefined) conditions.push(gte(columns.updatedAt, filter.updatedSince));
  if (filter.createdSince !== undefined) conditions.push(gte(columns.createdAt, filter.createdSince));
  const after = filter.after;
  if (after !== undefined) {
    // The redundant `updated_at <= …` lets the planner start its index scan at the cursor.
    conditions.push(lte(columns.updatedAt, after.updatedAt));
    conditions.push(
      or(lt(columns.updatedAt, after.updatedAt), and(eq(columns.updatedAt, after.updatedAt), idAfter(after.id)))!,
    );
  }
  return and(...conditions);
}
