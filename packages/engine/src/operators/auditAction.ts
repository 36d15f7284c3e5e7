/**
 * The audit entry of an operator's action on a run (`terminate`,
 * `retry-step`): a round of the run, `via: 'operator'`, by the operator's
 * principal (hashed like any other), that leaves the state where it was and
 * keeps the operator's reason (and what was done) as its message. A run whose
 * flow this runner does not serve is named by its row's flow name and hash.
 */
import type { StateValue } from 'xstate';
import type { AuditOutcome } from '../contract/audit.js';
import type { ParkedRequest } from '../contract/ledger.js';
import type { ParkedBlob } from '../decisions/parked.js';
import type { DecisionsPort } from '../decisions/port.js';

/** What {@link auditOperatorAction} records. */
export interface OperatorAction {
  readonly row: ParkedRequest;
  readonly blob: ParkedBlob;
  /** The round the action took (the run's next round number). */
  readonly round: number;
  readonly started: number;
  readonly operator: string;
  /** The state the run stood in (and stays in, for this entry). */
  readonly state: StateValue;
  readonly outcome: AuditOutcome;
  readonly message: string;
}

/** Record an operator's action in the audit trail (a no-op without one). */
export function auditOperatorAction(core: DecisionsPort, action: OperatorAction): Promise<void> {
  const { row, blob } = action;
  return core.audit({
    flow: core.flows.get(row.flow) ?? { name: row.flow, hash: blob.h, auditValues: false },
    fid: row.id,
    round: action.round,
    started: action.started,
    principal: action.operator,
    via: 'operator',
    before: action.state,
    after: action.state,
    path: [],
    asked: [],
    received: [],
    outcome: action.outcome,
    message: action.message,
  });
}
