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
import type { RoundOutcome } from '../contract/outcome.js';
import { checkRoundInput } from '../round/clientInput.js';
import { allowed, load, refuse } from './access.js';
import { advance, aftermath, resultText } from './advance.js';
import { isRequester, PARKED_RETENTION_MS, principalHash } from './parked.js';
import type { RunnerCore } from './port.js';
import type { DecisionCaller, InboxItem, RequestItem, ResumeRequest, ResumeServer, WithdrawRequest } from './types.js';

/** The resume tool's name: resume states are bound to it. */
export const RESUME_TOOL = 'baton_resume';

/** The `inbox` tool: the pending decisions `context` may make, oldest first. */
export async function inbox(core: RunnerCore, context: DecisionCaller): Promise<InboxItem[]> {
  const { codec } = core;
  const ledger = core.ledger;
  if (!ledger) return [];
  const now = core.now();
  const records = await ledger.listDecisions({
    pendingFor: { roles: context.roles ?? [], excludeRequester: principalHash(codec, context.principal), now },
  });
  const items: InboxItem[] = [];
  const loaded = new Map<string, Awaited<ReturnType<typeof load>>>();
  for (const record of records) {
    if (!loaded.has(record.id)) loaded.set(record.id, await load(core, 'baton_inbox', record.id));
    const request = loaded.get(record.id)!;
    if ('refusal' in request) continue;
    const { row, flow, blob } = request;
    if (row.status !== 'waiting' || !isDecision(flow.inputs[record.key])) continue;
    // The ledger filters by the stored hash; the parked requester is compared again here.
    if (isRequester(codec, blob, context.principal)) continue;
    if (allowed(flow, blob, record.key, context) !== true) continue;
    items.push({
      id: record.id,
      key: record.key,
      flow: record.flow,
      message: record.message,
      requestedAt: record.requestedAt,
      ...(record.deadline === null ? {} : { deadline: record.deadline }),
    });
  }
  return items;
}

/** The `requests` tool: the caller's own requests updated in the retention window, newest first. */
export async function requests(core: RunnerCore, context: DecisionCaller): Promise<RequestItem[]> {
  const { codec } = core;
  const ledger = core.ledger;
  if (!ledger) return [];
  const rows = await ledger.listRequests(principalHash(codec, context.principal), core.now() - PARKED_RETENTION_MS);
  return rows.map((row) => ({
    id: row.id,
    flow: row.flow,
    status: row.status,
    ...(row.status === 'waiting' ? { waitingFor: row.waitingFor.map((w) => ({ ...w })) } : {}),
  }));
}

/** The `resume` tool: the requester continues a parked flow through the runner's resume round. */
export async function resume(core: RunnerCore, server: ResumeServer, request: ResumeRequest): Promise<RoundOutcome> {
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

/** The `withdraw` tool: the requester's flow receives the withdrawal event and is advanced. */
export async function withdraw(core: RunnerCore, request: WithdrawRequest): Promise<RoundOutcome> {
  const { codec } = core;
  const { id, context } = request;
  const loaded = await load(core, 'baton_withdraw', id);
  if ('refusal' in loaded) return loaded.refusal!;
  const { row, flow, blob } = loaded;
  const no = (message: string) => refuse('baton_withdraw', message, row);
  if (!isRequester(codec, blob, context.principal)) return no(`Only the requester may withdraw request ${row.id}.`);
  if (row.status !== 'waiting') {
    return no(
      row.status === 'withdrawn'
        ? `Request ${row.id} was already withdrawn.`
        : `Request ${row.id} has ended (${row.status}): it can no longer be withdrawn.`,
    );
  }
  const event = { type: WITHDRAW_EVENT };
  if (!core.accepts(flow, blob.s, event)) {
    return no(
      `Request ${row.id} cannot be withdrawn now: "${flow.name}" has no withdrawal path (${WITHDRAW_EVENT}) where it stands. Nothing changed.`,
    );
  }
  const result = await advance(core, flow, row.id, context.principal, event);
  if (!result) {
    const now = await core.ledger!.getRequest(row.id);
    return no(`Request ${row.id} has ended (${now?.status ?? 'gone'}) meanwhile: it was not withdrawn.`);
  }
  const base = { flow: flow.name, fid: row.id, round: 1 };
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
