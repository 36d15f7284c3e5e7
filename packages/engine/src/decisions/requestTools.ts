/**
 * The decision tools around deciding: `inbox` (the pending decisions a
 * caller may make, never on their own requests), `requests` (the caller's
 * own requests of the last 30 days), `resume` (the requester continues a
 * parked flow as its own tool would, through the runner's `ResumeServer`)
 * and `withdraw` (the requester's flow receives the withdrawal event and is
 * advanced to its end). Each finds its request through `requestAccess.ts`;
 * anyone but the requester is refused `resume` and `withdraw`.
 */

import { isDecision, WITHDRAW_EVENT } from '../authoring/inputs/decision.js';
import type { StateBinding } from '../codec/types.js';
import type { DecisionRecord, ParkedRequest } from '../contract/ledger.js';
import type { RoundOutcome } from '../contract/outcome.js';
import { checkRoundInput } from '../round/clientInput.js';
import { load, refuse } from './access.js';
import { advance, aftermath, finalText, resultText } from './advance.js';
import { delegatedCandidates, delegatedFor, mayMake, withAbsences } from './delegation.js';
import { isRequester, PARKED_RETENTION_MS, principalHash } from './parked.js';
import type { ParkedPlay } from './playParked.js';
import type { DecisionsPort } from './port.js';
import { hasVoted, isQuorum, quorumStatus } from './quorum.js';
import type { DecisionCaller, InboxItem, RequestItem, ResumeRequest, ResumeServer, WithdrawRequest } from './types.js';

/** The resume tool's name: resume states are bound to it. */
export const RESUME_TOOL = 'baton_resume';

/** The `inbox` tool: the pending decisions `context` may make, oldest first. */
export async function inbox(core: DecisionsPort, caller: DecisionCaller): Promise<InboxItem[]> {
  const { codec } = core;
  const ledger = core.ledger;
  // No served flow declares a decision: nothing to make (and the ledger need not keep decisions).
  if (!ledger || ![...core.flows.values()].some((flow) => flow.decisions.length > 0)) return [];
  const now = core.now();
  const context = await withAbsences(core, caller);
  const listed = await ledger.decisions.listDecisions({
    pendingFor: { roles: context.roles ?? [], excludeRequester: principalHash(codec, context.principal), now },
  });
  // Those handed to the caller and those of the absent principals it stands in for, once each.
  const seen = new Set<string>();
  const records = [...listed, ...(await delegatedCandidates(core, context))]
    .filter((r) => !seen.has(`${r.id}\u0000${r.key}`) && seen.add(`${r.id}\u0000${r.key}`))
    .sort((a, b) => a.requestedAt - b.requestedAt);
  const items: InboxItem[] = [];
  const loaded = new Map<string, Awaited<ReturnType<typeof load>>>();
  for (const record of records) {
    if (!loaded.has(record.id)) loaded.set(record.id, await load(core, 'baton_inbox', record.id));
    const request = loaded.get(record.id)!;
    if ('refusal' in request) {
      // Sealed with a key this server lacks: listed (without the decision's message, which this
      // server cannot check the caller may read), so the decider learns why it cannot be decided here.
      if (request.unknownKey) {
        items.push({
          id: record.id,
          key: record.key,
          flow: record.flow,
          message: request.refusal.message,
          requestedAt: record.requestedAt,
          unreadable: request.unknownKey,
        });
      }
      continue;
    }
    const { row, flow, blob } = request;
    if (row.status !== 'waiting' || !isDecision(flow.inputs[record.key])) continue;
    // No longer awaited (the flow moved on, e.g. escalated to another role): not in anyone's inbox.
    if (!row.waitingFor.some((w) => w.key === record.key)) continue;
    // The ledger filters by the stored hash; the parked requester is compared again here.
    if (isRequester(codec, blob, context.principal)) continue;
    const right = mayMake(codec, flow, blob, record, context);
    if (typeof right === 'string') continue;
    // A quorum decision the caller voted on is no longer theirs to make.
    const votes = isQuorum(flow, record.key) ? await ledger.decisions.listVotes(record.id) : [];
    if (hasVoted(core, votes, record.key, context)) continue;
    const quorum = quorumStatus(core, flow, votes, record.key, context);
    items.push({
      id: record.id,
      key: record.key,
      flow: record.flow,
      message: record.message,
      requestedAt: record.requestedAt,
      ...(record.deadline === null ? {} : { deadline: record.deadline }),
      ...(quorum ? { quorum } : {}),
      ...(right.onBehalfOf ? { delegated: delegatedFor(right.onBehalfOf) } : {}),
    });
  }
  return items;
}

/** The `requests` tool: the caller's own requests updated in the retention window, newest first. */
export async function requests(core: DecisionsPort, context: DecisionCaller): Promise<RequestItem[]> {
  const { codec } = core;
  const ledger = core.ledger;
  if (!ledger) return [];
  const rows = await ledger.requests.listRequests(
    principalHash(codec, context.principal),
    core.now() - PARKED_RETENTION_MS,
  );
  return rows.map((row) => ({
    id: row.id,
    flow: row.flow,
    status: row.status,
    ...(row.status === 'waiting' ? { waitingFor: row.waitingFor.map((w) => ({ ...w })) } : {}),
  }));
}

/** The `resume` tool: the requester continues a parked flow through the runner's resume round. */
export async function resume(core: DecisionsPort, server: ResumeServer, request: ResumeRequest): Promise<RoundOutcome> {
  const { codec } = core;
  const { id, context } = request;
  checkRoundInput({ id }, request.inputResponses);
  const loaded = await load(core, RESUME_TOOL, id);
  if ('refusal' in loaded) return loaded.refusal!;
  const { row, flow, blob } = loaded;
  if (!isRequester(codec, blob, context.principal)) {
    return refuse(RESUME_TOOL, `Only the requester may resume request ${row.id}.`, row);
  }
  const binding: StateBinding = {
    principal: context.principal,
    flow: flow.name,
    method: 'tools/call',
    target: RESUME_TOOL,
    args: { id: row.id },
  };
  return server.resume(
    flow,
    binding,
    context,
    request.requestState,
    request.inputResponses,
    request.requestState ? undefined : row,
  );
}

/** The withdraw tool's name (its refusals name it). */
const WITHDRAW_TOOL = 'baton_withdraw';

/**
 * The `withdraw` tool: the requester's flow receives the withdrawal event and is advanced,
 * unless a decision was recorded first. A withdrawal is delivered only to a state that has
 * taken every decision recorded before it, and its write is the request's compare-and-set:
 * a decision recorded meanwhile (its own compare-and-set on the version) wins, is delivered,
 * and the withdrawal is refused saying so. Only a delivered withdrawal is acknowledged.
 */
export async function withdraw(core: DecisionsPort, request: WithdrawRequest): Promise<RoundOutcome> {
  const { id, context } = request;
  const loaded = await load(core, WITHDRAW_TOOL, id);
  if ('refusal' in loaded) return loaded.refusal!;
  if (!isRequester(core.codec, loaded.blob, context.principal)) {
    return refuse(WITHDRAW_TOOL, `Only the requester may withdraw request ${loaded.row.id}.`, loaded.row);
  }
  return deliverWithdrawal(core, loaded, { caller: context.principal, via: 'withdraw', tool: WITHDRAW_TOOL });
}

/** A request found by `load`, its flow and its opened blob. */
export type LoadedRequest = Exclude<Awaited<ReturnType<typeof load>>, { refusal: unknown }>;

/** Who delivers a withdrawal: the requester (`withdraw`), or an operator cancelling the run with a reason. */
export interface WithdrawalBy {
  readonly caller: string;
  readonly via: 'withdraw' | 'operator';
  /** What refusals name. */
  readonly tool: string;
  /** The operator's reason, for the audit trail. */
  readonly reason?: string;
}

/**
 * Deliver the withdrawal event to a loaded request (whoever may: `withdraw` checked the requester),
 * as `withdraw` describes: one compare-and-set write, refused saying what won when a decision or
 * any other write came first. Shared by the `withdraw` tool and an operator's cancel.
 */
export async function deliverWithdrawal(
  core: DecisionsPort,
  loaded: LoadedRequest,
  by: WithdrawalBy,
): Promise<RoundOutcome> {
  const { ledger, row, flow, blob } = loaded;
  const caller = by.caller;
  const no = (message: string) => refuse(by.tool, message, row);
  if (row.status !== 'waiting') return no(endedFirst(core, row, 'before'));
  const event = { type: WITHDRAW_EVENT };
  if (!core.accepts(flow, blob.s, event)) {
    return no(
      `Request ${row.id} cannot be withdrawn now: "${flow.name}" has no withdrawal path (${WITHDRAW_EVENT}) where it stands. Nothing changed.`,
    );
  }
  // Decisions recorded but not yet delivered when the request was read came first.
  const decided = (records: readonly DecisionRecord[]) =>
    records.filter((r) => r.status === 'decided').map((r) => r.key);
  const delivered = new Set(blob.s.d ?? []);
  const before = decided(await ledger.decisions.listDecisions({ id: row.id }));
  const undelivered = before.filter((key) => !delivered.has(key));
  if (undelivered.length > 0) {
    const settled = await advance(core, flow, row.id, caller, by.via, undefined, undefined, by.reason);
    const after = await load(core, by.tool, row.id);
    if ('refusal' in after) return after.refusal!;
    const took = after.row.status !== 'waiting' || undelivered.some((key) => (after.blob.s.d ?? []).includes(key));
    if (took) return no(decidedFirst(core, after.row, settled));
    // The rest are decisions the flow no longer awaits: they do not stop a withdrawal.
  }
  // Any decision recorded from here on wins the race: the withdrawal stops before it writes.
  const known = new Set(before);
  const result = await advance(
    core,
    flow,
    row.id,
    caller,
    by.via,
    event,
    (records) => decided(records).every((key) => known.has(key)),
    by.reason,
  );
  if (result?.type === 'conflict') {
    const settled = await advance(core, flow, row.id, caller, by.via, undefined, undefined, by.reason);
    const now = await ledger.requests.getRequest(row.id);
    return no(now ? decidedFirst(core, now, settled) : `There is no request ${row.id}.`);
  }
  if (!result) {
    // It ended since it was read: by a decision recorded meanwhile, or otherwise (a deadline, its steps).
    const now = await ledger.requests.getRequest(row.id);
    const byDecision = decided(await ledger.decisions.listDecisions({ id: row.id })).some((key) => !known.has(key));
    return no(now ? endedFirst(core, now, byDecision ? 'decided' : 'meanwhile') : `There is no request ${row.id}.`);
  }
  const base = { flow: flow.name, fid: row.id, round: 1 };
  if (result.type === 'done' && !result.end.terminal) {
    return no(`Not withdrawn: request ${row.id} could not take the withdrawal: ${aftermath(row.id, result)}`);
  }
  if (!result.end.eventSent) {
    // A decision recorded before (or a deadline) moved the flow first, where it takes no withdrawal.
    const first = result.end.fired > 0 && result.end.delivered.length === 0 ? 'expired first' : 'was decided first';
    const said = aftermath(row.id, result);
    return no(
      result.type === 'done'
        ? `Not withdrawn: request ${row.id} ${first} and ${said.replace(/^The flow has ended/, 'has ended')}`
        : `Not withdrawn: request ${row.id} ${first} and continues where it cannot be withdrawn. ${said}`,
    );
  }
  const said =
    result.type === 'done'
      ? resultText(result.end.outcome.type === 'complete' ? result.end.outcome.result : undefined)
      : '';
  const status = result.type === 'done' ? result.status : 'waiting';
  const textOut =
    status === 'withdrawn'
      ? `Withdrawn: request ${row.id} (${flow.name}).${said ? ` The flow says: ${said}` : ''}`
      : `Withdrawal delivered to request ${row.id} (${flow.name}). ${aftermath(row.id, result)}`;
  return {
    type: 'complete',
    ...base,
    result: {
      content: [{ type: 'text', text: textOut }],
      structuredContent: { status: status ?? 'waiting', id: row.id },
    },
  };
}

/**
 * Why a request that is no longer waiting was not withdrawn, with its final outcome: it had
 * ended `before` the withdrawal read it, or ended `meanwhile`, or a decision recorded meanwhile
 * (`decided`) ended it.
 */
function endedFirst(core: DecisionsPort, row: ParkedRequest, when: 'before' | 'meanwhile' | 'decided'): string {
  const said = finalText(core, row);
  const end = said ? `: ${said}` : '.';
  if (row.status === 'withdrawn') return `Request ${row.id} was already withdrawn.`;
  const first = when === 'before' ? '' : ' first';
  if (row.status === 'expired') return `Not withdrawn: request ${row.id} expired${first}${end}`;
  if (when === 'decided') return `Not withdrawn: request ${row.id} was decided first and has ended${end}`;
  return `Not withdrawn: request ${row.id} has ended${first}${end} It can no longer be withdrawn.`;
}

/** Why the withdrawal lost to a decision recorded first: what became of the request. */
function decidedFirst(core: DecisionsPort, row: ParkedRequest, settled: ParkedPlay | undefined): string {
  if (row.status !== 'waiting') return endedFirst(core, row, 'decided');
  return `Not withdrawn: request ${row.id} was decided first and continues. ${aftermath(row.id, settled)}`;
}
