/**
 * The requester's own run, read: what the run-status app of an MCP Apps host
 * shows beside a parked call (`docs/mcp-apps.md`). It reads the parked
 * request, its decisions and votes, and its audited rounds, and writes
 * nothing (no round is played, no audit entry appended), so an app may poll
 * it. It answers the requester only: an unknown id and another principal's
 * request are refused with the same sentence (no oracle), as the tasks
 * extension's `get` does. The flow author's summary line
 * (`defineFlow({ summary })`) and the data of the flow's own app for the
 * state the run waits in (`defineFlow({ app })`) are computed here from the
 * parked context; one that throws (or a summary that is not a string) is left out.
 */
import type { StateValue } from 'xstate';
import type { AuditEntry } from '../contract/audit.js';
import type { ParkedRequest } from '../contract/ledger.js';
import { load } from './access.js';
import { resultText } from './advance.js';
import { isRequester, type ParkedBlob } from './parked.js';
import type { DecisionsPort } from './port.js';
import { isQuorum, quorumStatus } from './quorum.js';
import type { RunStatus, RunStatusRequest, RunStatusResult, RunStep, RunWait } from './types.js';

/** The longest summary line kept (characters). */
const SUMMARY_MAX = 300;

/** A state value in words: `review`, or `approval.manager` for a nested state, `a, b` for parallel ones. */
export function stateName(value: StateValue | null | undefined): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  return Object.entries(value)
    .map(([key, inner]) => {
      const rest = stateName(inner as StateValue | undefined);
      return rest ? `${key}.${rest}` : key;
    })
    .join(', ');
}

/** The author's summary of the parked context, or `undefined`. */
function summaryOf(core: DecisionsPort, flowName: string, context: unknown): string | undefined {
  const summary = core.flows.get(flowName)?.summary;
  if (!summary) return undefined;
  try {
    const line = summary(context as never);
    if (typeof line !== 'string' || line.trim() === '') return undefined;
    const trimmed = line.trim();
    return trimmed.length > SUMMARY_MAX ? `${trimmed.slice(0, SUMMARY_MAX - 1)}…` : trimmed;
  } catch (error) {
    core.log({ type: 'flow_error', flow: flowName, fid: '', error });
    return undefined;
  }
}

/** The flow's own app data for the run's state ({@link Flow.app}), as JSON; `undefined` when it has none. */
function appOf(core: DecisionsPort, flowName: string, state: string, context: unknown): RunStatus['app'] {
  const data = core.flows.get(flowName)?.app?.states[state];
  if (!data) return undefined;
  try {
    const value = data(context as never);
    return { state, data: value === undefined ? null : JSON.parse(JSON.stringify(value)) };
  } catch (error) {
    core.log({ type: 'flow_error', flow: flowName, fid: '', error });
    return undefined;
  }
}

/** The rounds that moved the run, from its audit trail (`[]` without one). */
function stepsOf(entries: readonly AuditEntry[]): RunStep[] {
  return entries.map((entry) => ({
    round: entry.round,
    via: entry.via,
    at: entry.at,
    states: entry.path.map((value) => stateName(value)).filter((name) => name !== ''),
    outcome: entry.outcome,
  }));
}

/** What a waiting request waits for, with each decision's message, deadline and votes so far. */
async function waitsOf(
  core: DecisionsPort,
  request: RunStatusRequest,
  row: ParkedRequest,
  flowName: string,
): Promise<RunWait[]> {
  if (row.status !== 'waiting' || row.waitingFor.length === 0) return [];
  const ledger = core.ledger!;
  const flow = core.flows.get(flowName)!;
  const records = flow.decisions.length > 0 ? await ledger.decisions.listDecisions({ id: row.id }) : [];
  const waits: RunWait[] = [];
  for (const wait of row.waitingFor) {
    const record = records.find((r) => r.key === wait.key);
    const votes = isQuorum(flow, wait.key) ? await ledger.decisions.listVotes(row.id) : [];
    const quorum = isQuorum(flow, wait.key) ? quorumStatus(core, flow, votes, wait.key, request.context) : undefined;
    waits.push({
      key: wait.key,
      ...(wait.role !== undefined ? { role: wait.role } : {}),
      ...(wait.event !== undefined ? { event: wait.event } : {}),
      ...(record ? { message: record.message } : {}),
      ...(record && record.deadline !== null ? { deadline: record.deadline } : {}),
      ...(quorum ? { quorum } : {}),
    });
  }
  return waits;
}

/** How the run ended, when it has: the flow's result text, or why it ended without one. */
function outcomeOf(row: ParkedRequest, blob: ParkedBlob): RunStatus['outcome'] {
  if (row.status === 'waiting') return undefined;
  const final = blob.o;
  if (final?.type === 'complete') return { text: resultText(final.result), isError: final.result.isError === true };
  if (final?.type === 'error') return { text: final.message, isError: true };
  return { text: `Request ${row.id} has ended (${row.status}).`, isError: row.status !== 'completed' };
}

/** The `runStatus` read: see the module comment. */
export async function runStatus(core: DecisionsPort, request: RunStatusRequest): Promise<RunStatusResult> {
  const loaded = await load(core, 'baton_run_status', request.id);
  if ('refusal' in loaded) {
    return { status: 'refused', reason: loaded.reason ?? 'unknown', message: loaded.refusal!.message };
  }
  const { row, flow, blob } = loaded;
  // Someone else's run reads as no run at all.
  if (!isRequester(core.codec, blob, request.context.principal)) {
    return { status: 'refused', reason: 'unknown', message: `There is no request ${row.id}.` };
  }
  const summary = summaryOf(core, flow.name, blob.s.s[1]);
  const outcome = outcomeOf(row, blob);
  const steps = stepsOf(core.rounds ? await core.rounds(row.id) : []);
  // An ended run keeps its last parked state: the state it ended in is its last round's (else its status).
  const ended = steps.at(-1)?.states.at(-1);
  const state = row.status === 'waiting' ? stateName(blob.s.s[0]) : (ended ?? row.status);
  const app = row.status === 'waiting' ? appOf(core, flow.name, state, blob.s.s[1]) : undefined;
  const run: RunStatus = {
    id: row.id,
    flow: flow.name,
    ...(flow.title ? { flowTitle: flow.title } : {}),
    ...(summary ? { summary } : {}),
    status: row.status,
    state,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    ...(row.status === 'waiting' && typeof row.dueAt === 'number' ? { dueAt: row.dueAt } : {}),
    waitingFor: await waitsOf(core, request, row, flow.name),
    steps,
    ...(outcome ? { outcome } : {}),
    ...(app ? { app } : {}),
    pollMs: Math.round(core.decisions.taskPoll.decisionMs),
  };
  return { status: 'found', run };
}
