/**
 * What the SQL drivers share about delegation (schema 12): an absence
 * delegate as a `baton_delegations` row and back (roles as JSON text), a
 * hand-over as the JSON text of `baton_decisions.handover`, and the filter of
 * `listDelegations` as one drizzle condition, so SQLite and PostgreSQL select
 * the same delegates.
 */
import type { DelegationFilter, DelegationRecord, HandOver, NewDelegation } from '@baton/engine';
import { and, type Column, eq, gt, isNull, lte, type SQL } from 'drizzle-orm';
import { LedgerError } from './errors.js';

/** A `baton_delegations` row as drizzle reads it back. */
export type StoredDelegation = Omit<DelegationRecord, 'roles'> & { readonly roles: string };

/** A new absence delegate as a row: roles as JSON text, not removed. */
export function delegationRow(delegation: NewDelegation): StoredDelegation {
  return {
    ...delegation,
    roles: JSON.stringify([...delegation.roles]),
    removedAt: null,
    removedReason: null,
    removedBy: null,
    removedByName: null,
  };
}

/** A stored row as the engine's `DelegationRecord`. */
export function toDelegationRecord(row: StoredDelegation): DelegationRecord {
  let roles: unknown;
  try {
    roles = JSON.parse(row.roles);
  } catch (error) {
    throw new LedgerError(`baton_delegations row "${row.id}" has unreadable roles`, { cause: error });
  }
  return {
    ...row,
    roles: Array.isArray(roles) ? roles.filter((r): r is string => typeof r === 'string') : [],
    startsAt: Number(row.startsAt),
    endsAt: Number(row.endsAt),
    createdAt: Number(row.createdAt),
    removedAt: row.removedAt === null ? null : Number(row.removedAt),
  };
}

/** A hand-over as the JSON text `baton_decisions.handover` holds. */
export function handoverText(handover: HandOver): string {
  return JSON.stringify(handover);
}

/** The `baton_delegations` columns the filter reads. */
export interface DelegationFilterColumns {
  readonly delegate: Column;
  readonly startsAt: Column;
  readonly endsAt: Column;
  readonly removedAt: Column;
}

/** The `where` of `listDelegations`: `undefined` when the filter selects every delegate. */
export function delegationFilterWhere(columns: DelegationFilterColumns, filter: DelegationFilter): SQL | undefined {
  const conditions: SQL[] = [];
  if (filter.delegate !== undefined) conditions.push(eq(columns.delegate, filter.delegate));
  if (filter.activeAt !== undefined) {
    conditions.push(
      isNull(columns.removedAt),
      lte(columns.startsAt, filter.activeAt),
      gt(columns.endsAt, filter.activeAt),
    );
  }
  return and(...conditions);
}
