/**
 * What the ledgers share about durable steps (`baton_steps`): turning a row
 * drizzle reads back into the engine's `StepRecord` (a hand-edited status is
 * a one-line `LedgerError`, never a silent default), and the decision a
 * driver makes after its conditional writes lost: the step was recorded
 * (deliver it) or another owner's lease still runs (wait). Claims are three
 * statements, each atomic on its own: insert the row (first claim), else take
 * it over when it is ours or its lease ended (one conditional update: of any
 * number of concurrent claimers exactly one matches), else read it.
 */
import type { ClaimStepResult, StepRecord, StepStatus } from '@baton/engine';
import { LedgerError } from './errors.js';

const STEP_STATUSES: ReadonlySet<string> = new Set<StepStatus>(['running', 'succeeded', 'failed']);

/** A `baton_steps` row as drizzle returns it (camelCase fields): a `StepRecord`, its status unchecked. */
export type StoredStep = Omit<StepRecord, 'status'> & { readonly status: string };

/** A stored row as the engine's `StepRecord`. */
export function toStepRecord(row: StoredStep): StepRecord {
  if (!STEP_STATUSES.has(row.status)) {
    throw new LedgerError(`baton_steps row ("${row.id}", "${row.key}") has an unknown status "${row.status}"`);
  }
  return {
    id: row.id,
    key: row.key,
    status: row.status as StepStatus,
    owner: row.owner,
    leaseUntil: Number(row.leaseUntil),
    claims: Number(row.claims),
    outcome: row.outcome,
    recordedAt: row.recordedAt === null ? null : Number(row.recordedAt),
    expiresAt: Number(row.expiresAt),
  };
}

/** After a lost insert and a lost takeover: recorded, or held by another owner. */
export function claimFailure(row: StoredStep | undefined, id: string, key: string): ClaimStepResult {
  if (row === undefined) throw new LedgerError(`Claiming step "${key}" of "${id}" did not settle`);
  const record = toStepRecord(row);
  if (record.status !== 'running') return { status: 'recorded', record };
  return { status: 'held', owner: record.owner, leaseUntil: record.leaseUntil };
}
