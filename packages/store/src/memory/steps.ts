/**
 * The memory ledger's `steps` facet: durable steps claimed under a lease
 * (a new owner counts as another claim), recorded once, read back, and
 * reopened by an operator when they failed.
 */
import type { ClaimStep, ClaimStepResult, LedgerSteps, RecordStep, RecordStepResult, StepRecord } from '@baton/engine';
import { decisionKey, type MemoryState } from './state.js';

/** The `steps` facet over `state`. */
export function memorySteps(state: MemoryState): LedgerSteps {
  const { steps, assertOpen } = state;
  return {
    async claimStep(claim: ClaimStep): Promise<ClaimStepResult> {
      assertOpen();
      const at = decisionKey(claim.id, claim.key);
      const row = steps.get(at);
      if (row === undefined) {
        steps.set(at, {
          id: claim.id,
          key: claim.key,
          status: 'running',
          owner: claim.owner,
          leaseUntil: claim.leaseUntil,
          claims: 1,
          outcome: null,
          recordedAt: null,
          expiresAt: claim.expiresAt,
        });
        return { status: 'claimed', claims: 1 };
      }
      if (row.status !== 'running') return { status: 'recorded', record: row };
      if (row.owner !== claim.owner && row.leaseUntil > claim.now) {
        return { status: 'held', owner: row.owner, leaseUntil: row.leaseUntil };
      }
      const claims = row.owner === claim.owner ? row.claims : row.claims + 1;
      steps.set(at, { ...row, owner: claim.owner, leaseUntil: claim.leaseUntil, claims });
      return { status: 'claimed', claims };
    },

    async recordStep(record: RecordStep): Promise<RecordStepResult> {
      assertOpen();
      const at = decisionKey(record.id, record.key);
      const row = steps.get(at);
      if (row === undefined) return { status: 'unknown' };
      if (row.status !== 'running') return { status: 'already_recorded', record: row };
      steps.set(at, { ...row, status: record.status, outcome: record.outcome, recordedAt: record.now });
      return { status: 'recorded' };
    },

    async getStep(id: string, key: string): Promise<StepRecord | undefined> {
      assertOpen();
      return steps.get(decisionKey(id, key));
    },

    async reopenStep(id: string, key: string, _now: number): Promise<boolean> {
      assertOpen();
      const at = decisionKey(id, key);
      const row = steps.get(at);
      if (row?.status !== 'failed') return false;
      steps.set(at, { ...row, status: 'running', owner: '', leaseUntil: 0, outcome: null, recordedAt: null });
      return true;
    },
  };
}
