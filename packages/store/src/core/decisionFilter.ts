/**
 * The engine's `DecisionFilter` as one drizzle condition over a driver's
 * `baton_decisions` columns, so SQLite and PostgreSQL select the same
 * decisions: one request's (any status), or those pending for a decider
 * (pending, deadline not passed, role among theirs or none, not their own
 * request), or those handed to one assignee (schema 12). The condition is dialect-neutral; the statement around it (and
 * its order, which on PostgreSQL names a collation) stays in each driver.
 */
import type { DecisionFilter } from '@baton/engine';
import { and, type Column, eq, gt, inArray, isNull, ne, or, type SQL } from 'drizzle-orm';

/** The `baton_decisions` columns the filter reads: a driver passes its table. */
export interface DecisionFilterColumns {
  readonly id: Column;
  readonly status: Column;
  readonly deadline: Column;
  readonly role: Column;
  readonly requester: Column;
  readonly assignee: Column;
}

/** The `where` of `listDecisions`: `undefined` when the filter selects every decision. */
export function decisionFilterWhere(columns: DecisionFilterColumns, filter: DecisionFilter): SQL | undefined {
  const conditions: SQL[] = [];
  if (filter.id !== undefined) conditions.push(eq(columns.id, filter.id));
  const pendingFor = filter.pendingFor;
  if (pendingFor !== undefined) {
    conditions.push(
      eq(columns.status, 'pending'),
      or(isNull(columns.deadline), gt(columns.deadline, pendingFor.now))!,
      pendingFor.roles.length === 0
        ? isNull(columns.role)
        : or(isNull(columns.role), inArray(columns.role, [...pendingFor.roles]))!,
      ne(columns.requester, pendingFor.excludeRequester),
    );
  }
  const handedTo = filter.handedTo;
  if (handedTo !== undefined) {
    conditions.push(
      eq(columns.status, 'pending'),
      eq(columns.assignee, handedTo.assignee),
      or(isNull(columns.deadline), gt(columns.deadline, handedTo.now))!,
    );
  }
  return and(...conditions);
}
