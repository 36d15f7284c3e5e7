/**
 * The audit entry of one round: what the runner appends to its `AuditLog` for
 * every round that moves an instance, whoever's call runs it. The caller's
 * principal is written as a keyed hash (its readable id only with
 * `storePrincipalNames`), arguments only with the flow's `auditValues`, and
 * redacted. Never fails a round: an append that fails is logged. Changes with
 * what the audit trail records.
 */
import type { AuditRound } from '../decisions/port.js';
import { redactArgs } from '../inspection/inspector.js';
import type { RunnerState } from './state.js';

/** Append the audit entry of `round` when the runner has an audit log; never throws. */
export async function appendAudit(
  state: Pick<RunnerState, 'auditLog' | 'now' | 'codec' | 'redactions' | 'storeNames' | 'log'>,
  round: AuditRound,
): Promise<void> {
  if (!state.auditLog) return;
  await state.auditLog
    .append({
      fid: round.fid,
      flow: round.flow.name,
      hash: round.flow.hash,
      round: round.round,
      at: round.started,
      ms: state.now() - round.started,
      principal: state.codec.digest(round.principal, 'audit-principal'),
      via: round.via,
      before: round.before,
      after:
        round.after !== undefined ? round.after : round.path.length > 0 ? round.path[round.path.length - 1]! : null,
      path: round.path,
      asked: round.asked,
      received: round.received,
      outcome: round.outcome,
      ...(round.message !== undefined ? { message: round.message } : {}),
      ...(round.args !== undefined && round.flow.auditValues
        ? { args: redactArgs(round.args, state.redactions.get(round.flow.name)?.context ?? []) }
        : {}),
      ...(state.storeNames ? { principalName: round.principal } : {}),
      ...(round.expiresAt !== undefined ? { expiresAt: round.expiresAt } : {}),
    })
    .catch((error: unknown) => state.log({ type: 'flow_error', flow: round.flow.name, fid: round.fid, error }));
}
