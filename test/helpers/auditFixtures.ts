/**
 * Audit fixtures for the inspect tests: an in-memory `AuditLog` and the
 * rounds of two recorded `deploy_production` instances (one deployed in two
 * rounds, one cancelled), shaped exactly as the runner writes them.
 */
import type { AuditEntry, AuditInstance, AuditLog } from '@baton/engine';
import { deployProduction } from '../../examples/approvals/index.js';

/** A minimal in-memory audit log. */
export function memoryAuditLog(entries: AuditEntry[] = []): AuditLog & { entries: AuditEntry[] } {
  return {
    entries,
    async append(entry) {
      entries.push(entry);
    },
    async instances(options) {
      const byFid = new Map<string, AuditEntry[]>();
      for (const entry of entries) byFid.set(entry.fid, [...(byFid.get(entry.fid) ?? []), entry]);
      const list: AuditInstance[] = [...byFid.values()].map((rounds) => ({
        fid: rounds[0]!.fid,
        flow: rounds[0]!.flow,
        rounds: rounds.length,
        firstAt: rounds[0]!.at,
        lastAt: rounds[rounds.length - 1]!.at,
        lastOutcome: rounds[rounds.length - 1]!.outcome,
      }));
      return list
        .filter((i) => !options?.flow || i.flow === options.flow)
        .sort((a, b) => b.lastAt - a.lastAt)
        .slice(0, options?.limit ?? 100);
    },
    async rounds(fid) {
      return entries.filter((e) => e.fid === fid).sort((a, b) => a.round - b.round);
    },
  };
}

const T0 = Date.UTC(2026, 10, 29, 9, 30, 0);
const base = {
  flow: deployProduction.name,
  hash: deployProduction.hash,
  principal: 'cHJpbmNpcGFsLWhhc2g',
  via: 'call' as const,
};

/** `deploy_production` confirmed and ticketed: planning -> awaitingApproval, then -> confirmed -> deployed. */
export const DEPLOYED_FID = 'fi_deploy_ok_7Qx2';
/** `deploy_production` declined: awaitingApproval -> cancelled. */
export const CANCELLED_FID = 'fi_deploy_no_Zk31';

export function recordedDeployEntries(): AuditEntry[] {
  return [
    {
      ...base,
      fid: DEPLOYED_FID,
      round: 1,
      at: T0,
      ms: 12,
      before: null,
      after: 'awaitingApproval',
      path: ['planning', 'awaitingApproval'],
      asked: ['confirm_deploy', 'change_ticket'],
      received: [],
      outcome: 'input_required',
    },
    {
      ...base,
      fid: DEPLOYED_FID,
      round: 2,
      at: T0 + 95_000,
      ms: 7,
      before: 'awaitingApproval',
      after: 'deployed',
      path: ['awaitingApproval', 'confirmed', 'deployed'],
      asked: [],
      received: [
        { key: 'confirm_deploy', action: 'accept' },
        { key: 'change_ticket', action: 'accept' },
      ],
      outcome: 'complete',
    },
    {
      ...base,
      fid: CANCELLED_FID,
      round: 1,
      at: T0 - 3_600_000,
      ms: 10,
      before: null,
      after: 'awaitingApproval',
      path: ['planning', 'awaitingApproval'],
      asked: ['confirm_deploy', 'change_ticket'],
      received: [],
      outcome: 'input_required',
    },
    {
      ...base,
      fid: CANCELLED_FID,
      round: 2,
      at: T0 - 3_500_000,
      ms: 4,
      before: 'awaitingApproval',
      after: 'cancelled',
      path: ['awaitingApproval', 'cancelled'],
      asked: [],
      received: [{ key: 'confirm_deploy', action: 'decline' }],
      outcome: 'complete',
    },
  ];
}
