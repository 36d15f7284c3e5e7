/**
 * The decision tools on an official-SDK `McpServer`: `baton_inbox {}`,
 * `baton_decide { id, key? }`, `baton_delegate { id, key?, to, reason? }` (hand a
 * pending decision to someone else), `baton_requests {}`, `baton_resume { id }` and
 * `baton_withdraw { id }` (issue 13 item 5; DESIGN.md section 5). Each is a
 * thin mapping of the runner's transport-free decision API
 * (`runner.inbox/decide/requests/resume/withdraw`) with the caller's
 * principal and roles: lists come back as a readable text plus
 * `structuredContent` (ISO times), `baton_decide` and `baton_resume` are MRTR
 * rounds (their retries come back to the same tool with the same arguments),
 * refusals are tool errors (`isError: true`) with a sentence, and -32602 stays
 * reserved for bad requestStates and unreadable params, through the same
 * machinery as the flow tools (`playRound`, `escapeToolError`).
 */
import {
  DECIDE_TOOL,
  DELEGATE_TOOL,
  type InboxItem,
  type QuorumStatus,
  RESUME_TOOL,
  type RequestItem,
  type RoundOutcome,
  type Runner,
} from '@baton/engine';
import {
  type CallToolResult,
  type InputRequiredResult,
  type McpServer,
  ProtocolError,
  type RegisteredTool,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { ServingMetrics } from '../observability/metrics.js';
import { withIncomingTrace } from '../observability/traceContext.js';
import { appToolRegistrar, offerDecisionApps } from './apps/appTools.js';
import { APP_DECIDE_DESCRIPTION, type AppDecideArgs, appDecideArguments, decideInApp } from './apps/decideInApp.js';
import { registerFlowApps } from './apps/flowApps.js';
import { RUN_STATUS_TOOL, registerRunStatusTool } from './apps/runStatusTool.js';
import { withCachedJsonSchema } from './cachedJsonSchema.js';
import {
  declaredCapabilities,
  displayNameOfAuthInfo,
  isStatelessLegacyHttp,
  toInputCapabilities,
} from './callContext.js';
import { missingCapabilityError } from './missingCapability.js';
import { playRound, toProtocolError } from './playRound.js';
import { LEGACY_HTTP_MESSAGE, toToolResult } from './results.js';
import { enableToolErrorEscape, escapeToolError } from './toolErrorEscape.js';

/** The inbox tool's name: the pending decisions the caller may make. */
export const INBOX_TOOL = 'baton_inbox';
/** The requests tool's name: the caller's own requests. */
export const REQUESTS_TOOL = 'baton_requests';
/** The withdraw tool's name: the requester withdraws a waiting request. */
export const WITHDRAW_TOOL = 'baton_withdraw';
export { DECIDE_TOOL, DELEGATE_TOOL, RESUME_TOOL };
/** The names {@link registerDecisionTools} registers. */
export const DECISION_TOOLS: ReadonlySet<string> = new Set([
  INBOX_TOOL,
  DECIDE_TOOL,
  DELEGATE_TOOL,
  REQUESTS_TOOL,
  RESUME_TOOL,
  WITHDRAW_TOOL,
]);

/** Options of {@link registerDecisionTools}. */
export interface DecisionToolsOptions {
  readonly runner: Runner;
  /** The caller's principal. */
  readonly principal: (ctx: ServerContext) => string;
  /** The caller's roles. */
  readonly roles: (ctx: ServerContext) => readonly string[];
  /** Errors that never reach the client. */
  readonly onError: (error: unknown) => void;
  /** Where rounds are counted (see `observability/metrics.ts`). */
  readonly metrics?: ServingMetrics;
  /**
   * The client declared MCP Apps (`mcp/apps/`): `baton_inbox` and `baton_decide` declare the
   * decision app, and `baton_decide` takes its `answer`. Off: exactly the tools of every other client.
   */
  readonly apps?: boolean;
}

const id = z
  .string()
  .describe(
    'The request id: shown in the waiting result of the flow, in baton_inbox and in baton_requests (e.g. "R7x…", 22 characters).',
  );

// The tools' input schemas, built once (not per server) with their JSON Schema remembered.
const noArguments = withCachedJsonSchema(z.object({}));
const decisionKey = z
  .string()
  .optional()
  .describe(
    'Which decision (e.g. "manager_approval"): needed only when you may make more than one pending decision on the request.',
  );
const decideArguments = withCachedJsonSchema(z.object({ id, key: decisionKey }));
const appDecideArgs = appDecideArguments(id, decisionKey);
const idArgument = withCachedJsonSchema(z.object({ id }));
const delegateArguments = withCachedJsonSchema(
  z.object({
    id,
    key: z
      .string()
      .optional()
      .describe('Which decision: needed only when you may make more than one pending decision on the request.'),
    to: z.string().describe('The principal to hand the decision to (never the requester, never yourself).'),
    reason: z.string().max(500).optional().describe('Why (kept in the audit trail and shown with the decision).'),
  }),
);

const iso = (ms: number) => new Date(ms).toISOString();

/** An inbox entry on the wire (`baton_inbox`, and `GET /api/decisions` with its `href`): ISO times. */
export function inboxEntry(item: InboxItem) {
  return {
    id: item.id,
    key: item.key,
    flow: item.flow,
    message: item.message,
    requestedAt: iso(item.requestedAt),
    ...(item.deadline === undefined ? {} : { deadline: iso(item.deadline) }),
    ...(item.unreadable === undefined ? {} : { unreadable: item.unreadable }),
    ...(item.quorum === undefined ? {} : { quorum: quorumEntry(item.quorum) }),
    ...(item.delegated === undefined ? {} : { delegated: { ...item.delegated } }),
  };
}

/** A quorum decision's standing on the wire (ISO times): `{ required, approvals, needed, votes }`. */
export function quorumEntry(quorum: QuorumStatus) {
  return {
    required: quorum.required,
    approvals: quorum.approvals,
    needed: quorum.needed,
    votes: quorum.votes.map((v) => ({
      decider: v.decider,
      approves: v.approves,
      you: v.you,
      decidedAt: iso(v.decidedAt),
    })),
  };
}

/** "; 1 of 2 approvals (bob), 1 more needed" for a quorum decision, else ''. */
function quorumText(quorum: QuorumStatus | undefined): string {
  if (!quorum) return '';
  const who = quorum.votes.filter((v) => v.approves).map((v) => v.decider);
  return `; ${quorum.approvals} of ${quorum.required} approvals${who.length ? ` (${who.join(', ')})` : ''}, ${quorum.needed} more needed`;
}

/** How an inbox line says a decision came through a delegation ('' when it did not). */
function delegatedText(item: InboxItem): string {
  const d = item.delegated;
  if (!d) return '';
  const why = d.reason ? `, ${d.reason}` : '';
  return d.kind === 'handover'
    ? ` [handed to you by ${d.by ?? d.onBehalfOf}, for ${d.onBehalfOf}${why}]`
    : ` [for ${d.onBehalfOf}, who is away${why}]`;
}

function inboxText(all: readonly InboxItem[]): string {
  const items = all.filter((item) => item.unreadable === undefined);
  const unreadable = all.filter((item) => item.unreadable !== undefined);
  const lost =
    unreadable.length === 0
      ? ''
      : `\n${unreadable.length === 1 ? '1 decision' : `${unreadable.length} decisions`} cannot be read on this server:\n${unreadable
          .map((item) => `- Request ${item.id}, ${item.key} (${item.flow}): ${item.unreadable}`)
          .join('\n')}`;
  if (items.length === 0 && unreadable.length === 0) return 'No decisions are waiting for you.';
  if (items.length === 0) return `No decisions this server can read are waiting for you.${lost}`;
  const lines = items.map((item) => {
    const by = `${item.deadline === undefined ? '' : `; decide by ${iso(item.deadline)}`}${quorumText(item.quorum)}`;
    return `- Request ${item.id}, ${item.key} (${item.flow}), requested ${iso(item.requestedAt)}${by}${delegatedText(item)}: ${item.message}`;
  });
  const count = items.length === 1 ? '1 decision waits' : `${items.length} decisions wait`;
  return `${count} for you. Make one with baton_decide {"id": "<request id>"}.\n${lines.join('\n')}${lost}`;
}

function requestsText(items: readonly RequestItem[]): string {
  if (items.length === 0) return 'You have no requests from the last 30 days.';
  const lines = items.map((item) => {
    const waits =
      item.status === 'waiting'
        ? item.waitingFor && item.waitingFor.length > 0
          ? `, waiting for ${item.waitingFor.map((w) => (w.role ? `${w.key} (role ${w.role})` : w.key)).join(' and ')}`
          : ', waiting for you: continue with baton_resume'
        : '';
    return `- Request ${item.id} (${item.flow}): ${item.status}${waits}`;
  });
  return `Your requests from the last 30 days, newest first:\n${lines.join('\n')}`;
}

/**
 * Register the six decision tools on `server`. Call it only when the runner has flows that
 * await decisions and a ledger (`registerFlows` does); returns the registered tools by name.
 */
export function registerDecisionTools(server: McpServer, options: DecisionToolsOptions): Map<string, RegisteredTool> {
  const { runner, onError } = options;
  const tools = new Map<string, RegisteredTool>();
  const caller = (ctx: ServerContext) => {
    const displayName = displayNameOfAuthInfo(ctx.http?.authInfo);
    return {
      principal: options.principal(ctx),
      roles: options.roles(ctx),
      capabilities: toInputCapabilities(declaredCapabilities(server, ctx)),
      ...(displayName ? { displayName } : {}),
    };
  };

  /** A tool callback whose JSON-RPC errors (bad states, params) escape the SDK's isError wrapping. */
  const handler =
    <A>(body: (args: A, ctx: ServerContext) => Promise<CallToolResult | InputRequiredResult>) =>
    async (args: A, ctx: ServerContext) => {
      try {
        // A `traceparent` in the request's `_meta` is the parent of what the tool does (its rounds).
        return await withIncomingTrace(ctx.mcpReq._meta as Readonly<Record<string, unknown>> | undefined, () =>
          body(args, ctx),
        );
      } catch (error) {
        const protocolError = toProtocolError(error, onError);
        if (protocolError instanceof ProtocolError) escapeToolError(server, ctx, protocolError);
        throw protocolError;
      }
    };

  /** A round of decide, resume or withdraw, with the request's requestState and answers. */
  const round = (
    ctx: ServerContext,
    play: (state: {
      requestState?: string;
      inputResponses?: Readonly<Record<string, unknown>>;
    }) => Promise<RoundOutcome>,
  ) =>
    playRound(
      server,
      ctx,
      onError,
      (requestState) =>
        play({
          ...(requestState !== undefined ? { requestState } : {}),
          ...(ctx.mcpReq.inputResponses ? { inputResponses: ctx.mcpReq.inputResponses } : {}),
        }),
      options.metrics,
    ).then((outcome) => {
      // Deciding without form elicitation, on the 2026-07-28 wire: -32021 (`missingCapability.ts`).
      const missing = missingCapabilityError(outcome, ctx.mcpReq.envelope !== undefined);
      if (missing) throw missing;
      return toToolResult(outcome);
    });

  // MCP Apps: the two tools declare the decision app, through ext-apps' helper (`apps/appTools.ts`).
  const apps = options.apps === true;
  if (apps) offerDecisionApps(server);
  const registerTool = appToolRegistrar(server, apps);

  tools.set(
    INBOX_TOOL,
    registerTool(
      INBOX_TOOL,
      {
        title: 'Decisions waiting for you',
        description:
          'List the pending decisions you may make on requests by other people: your role matches, the request is not your own, not expired and not yet decided. Returns { decisions: [{ id, key, flow, message, requestedAt, deadline? }] } (ISO times). Make one with baton_decide.',
        inputSchema: noArguments,
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      handler(async (_args: unknown, ctx: ServerContext) => {
        const items = await runner.inbox(caller(ctx));
        return {
          content: [{ type: 'text', text: inboxText(items) }],
          structuredContent: { decisions: items.map(inboxEntry) },
        };
      }),
    ),
  );
  enableToolErrorEscape(server);

  tools.set(
    DECIDE_TOOL,
    registerTool(
      DECIDE_TOOL,
      {
        title: 'Make a decision',
        description: apps
          ? APP_DECIDE_DESCRIPTION
          : 'Make a decision on a request by someone else (see baton_inbox). You are asked one form (under the key "decision") with the decision\'s question; your answer is recorded once and the request moves on at once. The result starts with "Recorded". Refused, as a tool error saying why, when you may not decide it (your own request, or not your role), the id is unknown, or it was already decided, expired or withdrawn.',
        inputSchema: apps ? appDecideArgs : decideArguments,
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      },
      handler(async (args: AppDecideArgs, ctx: ServerContext) => {
        // In the decision app: the decision as data, or the app's answer recorded (`apps/decideInApp.ts`).
        if (apps) return decideInApp(runner, caller(ctx), args);
        // Deciding always asks a form, which a 2025-era client on stateless HTTP cannot answer.
        if (isStatelessLegacyHttp(server, ctx)) {
          return { content: [{ type: 'text', text: LEGACY_HTTP_MESSAGE }], isError: true };
        }
        return round(ctx, (state) =>
          runner.decide({
            id: args.id,
            ...(args.key !== undefined ? { key: args.key } : {}),
            context: caller(ctx),
            ...state,
          }),
        );
      }),
    ),
  );

  tools.set(
    DELEGATE_TOOL,
    server.registerTool(
      DELEGATE_TOOL,
      {
        title: 'Hand a decision to someone else',
        description:
          'Hand a pending decision you may make (see baton_inbox) to another person, who may then make it for you: it appears in their baton_inbox marked as handed. You no longer may make it while it is with them; others allowed in their own right still may. Never to the requester (four eyes) nor to yourself. The result starts with "Handed"; refusals are tool errors saying why.',
        inputSchema: delegateArguments,
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      },
      handler(async (args: { id: string; key?: string; to: string; reason?: string }, ctx: ServerContext) => {
        const out = await runner.delegateDecision({
          id: args.id,
          ...(args.key !== undefined ? { key: args.key } : {}),
          to: args.to,
          ...(args.reason !== undefined ? { reason: args.reason } : {}),
          context: caller(ctx),
        });
        if (out.status !== 'handed') return { content: [{ type: 'text', text: out.message }], isError: true };
        return {
          content: [{ type: 'text', text: out.message }],
          structuredContent: { status: 'handed', id: out.id, key: out.key, to: out.to },
        };
      }),
    ),
  );

  tools.set(
    REQUESTS_TOOL,
    server.registerTool(
      REQUESTS_TOOL,
      {
        title: 'Your requests',
        description:
          'List your own requests from the last 30 days, newest first: { requests: [{ id, flow, status, waitingFor? }] }, where status is waiting, completed, expired, withdrawn or terminated (ended by an operator), and waitingFor names the decisions (and roles) a waiting request needs. Continue one with baton_resume.',
        inputSchema: noArguments,
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      handler(async (_args: unknown, ctx: ServerContext) => {
        const items = await runner.requests(caller(ctx));
        return {
          content: [{ type: 'text', text: requestsText(items) }],
          structuredContent: {
            requests: items.map((item) => ({
              id: item.id,
              flow: item.flow,
              status: item.status,
              ...(item.waitingFor ? { waitingFor: item.waitingFor.map((w) => ({ ...w })) } : {}),
            })),
          },
        };
      }),
    ),
  );

  tools.set(
    RESUME_TOOL,
    server.registerTool(
      RESUME_TOOL,
      {
        title: 'Continue your request',
        description:
          "Continue one of your requests that waits (see baton_requests, or the id in the flow's waiting result). It answers exactly as the flow's own tool would: it may ask you for input, wait for a decision a while, say it is still waiting, or give the flow's final result. Only the requester may resume a request.",
        inputSchema: idArgument,
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
      },
      handler(async (args: { id: string }, ctx: ServerContext) =>
        round(ctx, (state) => runner.resume({ id: args.id, context: caller(ctx), ...state })),
      ),
    ),
  );

  tools.set(
    WITHDRAW_TOOL,
    server.registerTool(
      WITHDRAW_TOOL,
      {
        title: 'Withdraw your request',
        description:
          'Withdraw one of your requests that still waits for decisions: the flow takes its withdrawal path, pending decisions are closed, and the result says "Withdrawn". Only the requester may withdraw; a request that has ended cannot be withdrawn.',
        inputSchema: idArgument,
        annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
      },
      handler(async (args: { id: string }, ctx: ServerContext) =>
        round(ctx, () => runner.withdraw({ id: args.id, context: caller(ctx) })),
      ),
    ),
  );

  // MCP Apps: the run-status app's read of the caller's own run (`apps/runStatusTool.ts`).
  if (apps) {
    tools.set(RUN_STATUS_TOOL, registerRunStatusTool(server, runner, caller));
    // And the apps flows declare themselves (`defineFlow({ app })`, `apps/flowApps.ts`).
    registerFlowApps(server, runner);
  }

  return tools;
}
