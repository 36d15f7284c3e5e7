/**
 * `baton_run_status { id }`, the read-only tool the run-status app calls
 * through its host (`tools/call`) to show and refresh the requester's own
 * run: for a client that declared MCP Apps only, and visible to the app only
 * (`_meta.ui.visibility: ["app"]`: a host lists it to no model). It maps the
 * runner's `runStatus` (which plays no round and writes nothing, so polling
 * it is harmless) onto the wire with ISO times; another principal's request
 * and an unknown id are the same tool error (`{ status: "refused", reason:
 * "unknown" }`), so the app learns nothing of runs that are not the caller's.
 */
import type { DecisionCaller, Runner, RunStatus } from '@baton/engine';
import { registerAppTool } from '@modelcontextprotocol/ext-apps/server';
import type { CallToolResult, McpServer, RegisteredTool, ServerContext } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { withCachedJsonSchema } from '../cachedJsonSchema.js';
import { RUN_APP_URI } from './decisionApp.js';

/** The run-status tool's name. */
export const RUN_STATUS_TOOL = 'baton_run_status';

const runStatusArguments = withCachedJsonSchema(
  z.object({ id: z.string().describe('The request id of your run (the id in its waiting result).') }),
);

const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

/** A run on the wire of the app: the engine's read, ISO times. */
export function runEntry(run: RunStatus) {
  return {
    id: run.id,
    flow: run.flow,
    ...(run.flowTitle ? { flowTitle: run.flowTitle } : {}),
    ...(run.summary ? { summary: run.summary } : {}),
    status: run.status,
    state: run.state,
    createdAt: iso(run.createdAt),
    updatedAt: iso(run.updatedAt),
    ...(run.dueAt !== undefined ? { dueAt: iso(run.dueAt) } : {}),
    waitingFor: run.waitingFor.map((w) => ({
      key: w.key,
      ...(w.role !== undefined ? { role: w.role } : {}),
      ...(w.event !== undefined ? { event: w.event } : {}),
      ...(w.message !== undefined ? { message: w.message } : {}),
      ...(w.deadline !== undefined ? { deadline: iso(w.deadline) } : {}),
      ...(w.quorum
        ? { quorum: { required: w.quorum.required, approvals: w.quorum.approvals, needed: w.quorum.needed } }
        : {}),
    })),
    steps: run.steps.map((s) => ({
      round: s.round,
      via: s.via,
      at: iso(s.at),
      states: [...s.states],
      outcome: s.outcome,
    })),
    ...(run.outcome ? { outcome: { ...run.outcome } } : {}),
    ...(run.app ? { app: { state: run.app.state, data: run.app.data } } : {}),
    pollMs: run.pollMs,
  };
}

/** What waits, in words: "manager", "the event ci.finished", "a decision (key)". */
function waitsText(run: RunStatus): string {
  return run.waitingFor
    .map((w) => (w.role ? w.role : w.event ? `the event ${w.event}` : `a decision (${w.key})`))
    .join(' and ');
}

/** The sentence the model reads of a run (the app shows the rest). */
function runText(run: RunStatus): string {
  if (run.outcome) return `Request ${run.id} (${run.flow}) has ended (${run.status}): ${run.outcome.text}`;
  const waits = waitsText(run);
  return `Request ${run.id} (${run.flow}) is ${run.status}${waits ? `, waiting for ${waits}` : ''}, in state ${run.state}.`;
}

/** Answer `baton_run_status` for `caller`. */
export async function runStatusResult(runner: Runner, caller: DecisionCaller, id: string): Promise<CallToolResult> {
  const read = await runner.runStatus({ id, context: caller });
  if (read.status === 'refused') {
    return {
      content: [{ type: 'text', text: read.message }],
      structuredContent: { status: 'refused', reason: read.reason, title: 'No such run', message: read.message },
      isError: true,
    };
  }
  return { content: [{ type: 'text', text: runText(read.run) }], structuredContent: { run: runEntry(read.run) } };
}

/** Register `baton_run_status` on `server` (a server for a client that declared MCP Apps). */
export function registerRunStatusTool(
  server: McpServer,
  runner: Runner,
  caller: (ctx: ServerContext) => DecisionCaller,
): RegisteredTool {
  return registerAppTool(
    server,
    RUN_STATUS_TOOL,
    {
      title: 'Your run, as it stands',
      description:
        'Read one of your own runs (the request id of its waiting result): its state, what it waits for and until when, the steps that ran, and how it ended. Read only; for the run-status app. Refused for an id that is not one of your runs.',
      inputSchema: runStatusArguments,
      annotations: { readOnlyHint: true, openWorldHint: false },
      _meta: { ui: { resourceUri: RUN_APP_URI, visibility: ['app'] } },
    } as Parameters<typeof registerAppTool>[2],
    (async (args: { id: string }, ctx: ServerContext) => runStatusResult(runner, caller(ctx), args.id)) as never,
  );
}
