/**
 * Absence delegates, set by operators (`baton delegates set|list|remove`):
 * "while X is away from T1 to T2, Y acts for X", with the roles of X that Y
 * uses stated explicitly and a reason. Written to the ledger's
 * `baton_delegations` (X's principal and roles sealed for the engine, hashes
 * and names when names are stored for people); a removal marks the row, so the
 * table stays the record of who delegated what, when and why, and by which
 * operator. What a delegate may then decide is `decisions/delegation.ts`'s.
 */
import type { DelegationRecord } from '../contract/ledger.js';
import { sealAuthority, shownPrincipal } from '../decisions/delegation.js';
import { principalHash } from '../decisions/parked.js';
import type { DecisionsPort } from '../decisions/port.js';
import type { AbsenceResult, AbsenceView, RemoveAbsenceRequest, SetAbsenceRequest } from './types.js';

/** A principal or role as an operator may name one. */
const NAME = /^[^\p{C}]{1,256}$/u;

/** An absence delegate as operators see it. */
function view(record: DelegationRecord, now: number): AbsenceView {
  return {
    id: record.id,
    principal: shownPrincipal(record.principal, record.principalName),
    delegate: shownPrincipal(record.delegate, record.delegateName),
    roles: [...record.roles],
    startsAt: record.startsAt,
    endsAt: record.endsAt,
    reason: record.reason,
    setBy: shownPrincipal(record.setBy, record.setByName),
    createdAt: record.createdAt,
    active: record.removedAt === null && record.startsAt <= now && now < record.endsAt,
    ...(record.removedAt === null
      ? {}
      : {
          removedAt: record.removedAt,
          removedReason: record.removedReason ?? '',
          removedBy: shownPrincipal(record.removedBy ?? '', record.removedByName),
        }),
  };
}

/**
 * The runner's ledger, or why not. Its `decisions` facet keeps absence delegates: a ledger
 * without it throws `LedgerFacetMissingError` (declare `decisions` at createRunner to be refused there).
 */
function absenceLedger(core: DecisionsPort) {
  return core.ledger ?? 'There is no ledger to keep absence delegates in.';
}

/** Set an absence delegate (see `OperatorTools.setAbsence`). */
export async function setAbsence(core: DecisionsPort, request: SetAbsenceRequest): Promise<AbsenceResult> {
  const ledger = absenceLedger(core);
  if (typeof ledger === 'string') return { status: 'refused', message: ledger };
  const { principal, delegate, startsAt, endsAt, reason, operator } = request;
  const roles = [...new Set(request.roles)];
  const no = (message: string): AbsenceResult => ({ status: 'refused', message });
  if (!NAME.test(principal) || !NAME.test(delegate)) return no('Name the absent principal and the delegate.');
  if (principal === delegate) return no('A principal cannot be their own delegate.');
  if (!roles.every((role) => NAME.test(role))) return no('Roles are names without control characters.');
  if (!Number.isFinite(startsAt) || !Number.isFinite(endsAt) || endsAt <= startsAt) {
    return no('The absence must end after it starts.');
  }
  if (typeof reason !== 'string' || reason.trim() === '' || reason.length > 500) {
    return no('Give a reason (at most 500 characters): it is kept with the delegate.');
  }
  const { codec } = core;
  const names = core.decisions.storePrincipalNames;
  const id = core.newId();
  const now = core.now();
  const record: DelegationRecord = {
    id,
    principal: principalHash(codec, principal),
    principalName: names ? principal : null,
    delegate: principalHash(codec, delegate),
    delegateName: names ? delegate : null,
    roles,
    authority: sealAuthority(codec, ['absence', id], principal, roles),
    startsAt,
    endsAt,
    reason: reason.trim(),
    setBy: principalHash(codec, operator),
    setByName: names ? operator : null,
    createdAt: now,
    removedAt: null,
    removedReason: null,
    removedBy: null,
    removedByName: null,
  };
  const { removedAt: _a, removedReason: _r, removedBy: _b, removedByName: _n, ...inserted } = record;
  await ledger.decisions.setDelegation(inserted);
  return { status: 'set', delegation: view(record, now) };
}

/** Absence delegates, newest first (see `OperatorTools.listAbsences`). */
export async function listAbsences(
  core: DecisionsPort,
  options: { readonly all?: boolean } = {},
): Promise<AbsenceView[]> {
  const ledger = absenceLedger(core);
  if (typeof ledger === 'string') throw new Error(ledger);
  const now = core.now();
  const records = await ledger.decisions.listDelegations(options.all ? {} : {});
  return records.map((r) => view(r, now)).filter((v) => options.all || v.removedAt === undefined);
}

/** Remove an absence delegate (see `OperatorTools.removeAbsence`). */
export async function removeAbsence(core: DecisionsPort, request: RemoveAbsenceRequest): Promise<AbsenceResult> {
  const ledger = absenceLedger(core);
  if (typeof ledger === 'string') return { status: 'refused', message: ledger };
  if (typeof request.reason !== 'string' || request.reason.trim() === '') {
    return { status: 'refused', message: 'Give a reason: it is kept with the removal.' };
  }
  const names = core.decisions.storePrincipalNames;
  const removed = await ledger.decisions.removeDelegation({
    id: request.id,
    now: core.now(),
    reason: request.reason.trim(),
    by: principalHash(core.codec, request.operator),
    byName: names ? request.operator : null,
  });
  if (!removed) return { status: 'refused', message: `There is no standing absence delegate ${request.id}.` };
  const record = (await ledger.decisions.listDelegations({})).find((r) => r.id === request.id);
  return record
    ? { status: 'removed', delegation: view(record, core.now()) }
    : { status: 'refused', message: `There is no absence delegate ${request.id}.` };
}
