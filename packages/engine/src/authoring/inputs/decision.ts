/**
 * The `decision` input: an answer someone other than the flow's caller gives
 * through the decision tools (four eyes), as a form, with who may decide
 * (`role`, `may`); and the event a flow receives when its requester withdraws
 * a request that waits on decisions.
 */
import type { z } from 'zod';
import type { ElicitationSchema } from '../../contract/wire.js';
import { FlowDefinitionError } from '../../errors.js';
import { toElicitationSchema } from '../elicitationSchema.js';
import { form } from './form.js';
import { type FormAnswer, type FromContext, type InputSpec, never, type ParsedAnswer, resolve } from './spec.js';

/** One vote of a quorum decision, as the machine receives it (times in ms since epoch). */
export interface DecisionVote<T> {
  /** The voter's principal id. */
  readonly decider: string;
  readonly content: T;
  readonly decidedAt: number;
  /** Whether this vote approves (the decision's `approves`). */
  readonly approves: boolean;
}

/**
 * The event payload (without `type`) of a decision: always accepted, with who decided. A quorum
 * decision (`quorum` above 1) also carries every vote and whether it was approved; `content` and
 * `decider` are then the deciding vote's (the one that reached the quorum, or the rejection that
 * ended it), so a flow written for one decider reads it unchanged.
 */
export interface DecisionAnswer<T> {
  readonly action: 'accept';
  readonly content: T;
  /** The deciding principal's id (never the requester's: the engine enforces four eyes). */
  readonly decider: string;
  /** Quorum decisions only: every vote, oldest first. */
  readonly votes?: readonly DecisionVote<T>[];
  /** Quorum decisions only: `true` when the quorum approved, `false` when it was rejected. */
  readonly approved?: boolean;
}

/** What a quorum decision's `rejectWhen` is given: the votes so far, the new one included. */
export interface QuorumTally<T> {
  /** How many approvals the decision needs. */
  readonly quorum: number;
  readonly approvals: number;
  readonly rejections: number;
  readonly votes: readonly { readonly content: T; readonly approves: boolean }[];
}

/** What a decision's `may` predicate is given. */
export interface MayDecideArgs<TContext> {
  /** The flow's context as parked when the decision was requested. */
  readonly context: TContext;
  /** The principal who would decide. */
  readonly principal: string;
  /** That principal's roles. */
  readonly roles: readonly string[];
}

/**
 * A declared decision: asked of someone other than the flow's caller, through the decision
 * tools (`inbox`, `decide` on the runner; `baton_inbox`, `baton_decide` over MCP).
 */
export interface DecisionSpec<TContent = unknown, TContext = any>
  extends InputSpec<DecisionAnswer<TContent>, TContext> {
  readonly kind: 'decision';
  /** The role that may decide; `undefined` when only `may` says who may. */
  readonly role: string | undefined;
  /** The rendered message for the decider. */
  message(context: TContext): string;
  /** The form the decider answers, as an elicitation schema. */
  readonly requestedSchema: ElicitationSchema;
  /** Whether `principal` with `roles` may make this decision, given the parked context. */
  mayDecide(args: MayDecideArgs<TContext>): boolean;
  /** Validate the decider's elicitation answer (attacker-controlled), like a form's. */
  parseAnswer(raw: unknown): ParsedAnswer<FormAnswer<TContent>>;
  /** How many distinct principals must approve (1: the first answer decides). */
  readonly quorum: number;
  /** Whether an answer approves (quorum decisions). */
  approves(content: TContent): boolean;
  /** Whether the votes so far reject the decision (quorum decisions, before the quorum is reached). */
  rejects(tally: QuorumTally<TContent>): boolean;
}

/** The default of `approves`: an answer approves unless its `approve` field is `false`. */
export function defaultApproves(content: unknown): boolean {
  return (content as { approve?: unknown } | null)?.approve !== false;
}

/** Whether a declared input is a decision. */
export function isDecision(spec: InputSpec<any, any> | undefined): spec is DecisionSpec<any, any> {
  return spec?.kind === 'decision';
}

const ROLE = /^[A-Za-z0-9_.:-]{1,64}$/;

/** The largest quorum a decision may ask for. */
const MAX_QUORUM = 20;

/**
 * A decision someone other than the caller makes: four eyes. A state awaits it like an input
 * (`meta: ask(inputs, 'manager_approval')`); the caller is never asked for it. While a flow
 * awaits only decisions, its round answers "retry later" and the flow instance is parked in
 * the ledger (a flow with a decision needs a ledger). A decider finds it in the inbox, answers
 * the form (`schema`, `message`) and the machine receives
 * `{ type: 'input.<key>', action: 'accept', content, decider }`. Who may decide: `role` (the
 * decider must hold it), `may` (a predicate over the parked context and the decider), or both
 * (both must hold). The requester never decides their own request, whatever the role says.
 *
 * Quorum: with `quorum: N` (default 1), N distinct principals allowed to decide must approve;
 * each answer is a vote (four eyes holds for each; a second answer of the same principal is
 * refused `already_voted`). `approves(content)` says which answers approve (default: every
 * answer whose `approve` field is not `false`). One rejection ends the decision, rejected,
 * unless `rejectWhen({ quorum, approvals, rejections, votes })` is given: then it ends rejected
 * only when that returns `true` (checked after each vote that does not reach the quorum). The
 * machine receives one event when it ends: `{ type, action: 'accept', content, decider, votes:
 * [{ decider, content, decidedAt, approves }], approved }`, `content`/`decider` being the deciding vote's.
 *
 * @example
 * ```ts
 * import { decision } from '@baton/engine';
 * import { z } from 'zod';
 *
 * export const managerApproval = decision({
 *   message: ({ context }: { context: { amount: number; purpose: string } }) =>
 *     `Approve ${context.amount} for "${context.purpose}"?`,
 *   schema: z.object({ approve: z.boolean(), comment: z.string().max(500).optional() }),
 *   role: 'manager',
 * });
 * // the decider's form: { method: 'elicitation/create', params: { mode: 'form', message: 'Approve 250 for "books"?',
 * //   requestedSchema: { type: 'object', properties: { approve: { type: 'boolean' }, comment: { type: 'string', maxLength: 500 } }, required: ['approve'] } } }
 * // the machine receives: { type: 'input.manager_approval', action: 'accept', content: { approve: true }, decider: 'bob' }
 * ```
 * Without `role` or `may`, `defineFlow` throws FlowDefinitionError naming the flow and the decision's
 * key (`flow "expense_approval": decision "manager_approval" needs \`role\` or \`may\` to say who may decide`).
 *
 * @throws FlowDefinitionError for a role that is not 1-64 of `[A-Za-z0-9_.:-]`,
 *   a schema that cannot be expressed as an elicitation form, or a `quorum` that is not an integer from 1 to 20.
 */
export function decision<TSchema extends z.ZodObject, TContext = any>(options: {
  message: FromContext<string, TContext>;
  schema: TSchema;
  role?: string;
  may?: (args: MayDecideArgs<TContext>) => boolean;
  /** How many distinct principals must approve (an integer 1-20; default 1). */
  quorum?: number;
  /** Which answers approve (quorum decisions); default: `content.approve !== false`. */
  approves?: (content: z.output<TSchema>) => boolean;
  /** When the votes reject the decision (quorum decisions); default: at the first rejection. */
  rejectWhen?: (tally: QuorumTally<z.output<TSchema>>) => boolean;
}): DecisionSpec<z.output<TSchema>, TContext> {
  const { role, may } = options;
  const quorum = options.quorum ?? 1;
  if (!Number.isSafeInteger(quorum) || quorum < 1 || quorum > MAX_QUORUM) {
    throw new FlowDefinitionError(`decision quorum must be an integer from 1 to ${MAX_QUORUM}`);
  }
  const approves = options.approves ?? defaultApproves;
  const rejectWhen = options.rejectWhen;
  if (role !== undefined && !ROLE.test(role)) {
    throw new FlowDefinitionError(`decision role "${role}" must be 1-64 characters of [A-Za-z0-9_.:-]`);
  }
  const asForm = form({ message: options.message, schema: options.schema });
  const requestedSchema = toElicitationSchema(options.schema);
  const spec: DecisionSpec<z.output<TSchema>, TContext> = {
    kind: 'decision',
    fallback: false,
    onlyWhenAsked: true,
    role,
    requestedSchema,
    shape: {
      kind: 'decision',
      requestedSchema,
      role: role ?? null,
      may: may ? `fn:${may.toString()}` : null,
      // Only quorum decisions add to the shape: a definition hash without them stays as it was.
      ...(quorum > 1
        ? {
            quorum,
            approves: options.approves ? `fn:${options.approves.toString()}` : null,
            rejectWhen: rejectWhen ? `fn:${rejectWhen.toString()}` : null,
          }
        : {}),
    },
    quorum,
    approves: (content) => {
      try {
        return approves(content) === true;
      } catch {
        return false;
      }
    },
    rejects: (tally) => {
      if (!rejectWhen) return tally.rejections > 0;
      try {
        return rejectWhen(tally) === true;
      } catch {
        return false;
      }
    },
    message: (context) => resolve(options.message, context),
    // What the decider is shown (the decision tools ask it under the key `decision`).
    build: (context, note) => asForm.build(context, note),
    // A caller never answers a decision: its answers are never read (the round asks only the caller's keys).
    parse: () => ({ ok: false, problem: 'a decision is made through the decision tools, not by the caller' }),
    parseAnswer: (raw) => asForm.parse(raw),
    oversized: never,
    mayDecide(args) {
      if (role === undefined && may === undefined) return false; // refused by defineFlow; nobody, meanwhile
      if (role !== undefined && !args.roles.includes(role)) return false;
      if (may === undefined) return true;
      try {
        return may(args) === true;
      } catch {
        return false;
      }
    },
  };
  // Who may decide is checked by `defineFlow`, which can name the flow and the decision's key.
  if (role === undefined && may === undefined) WHO_DECIDES_MISSING.add(spec);
  return spec;
}

/** Decisions made without `role` or `may`: `defineFlow` refuses them, naming the flow and the key. */
const WHO_DECIDES_MISSING = new WeakSet<object>();

/**
 * What is wrong with a catalog's decisions, one sentence per decision, e.g.
 * `decision "manager_approval" needs \`role\` or \`may\` to say who may decide`; `[]` when nothing is.
 */
export function decisionProblems(inputs: Readonly<Record<string, unknown>>): string[] {
  return Object.entries(inputs)
    .filter(([, spec]) => typeof spec === 'object' && spec !== null && WHO_DECIDES_MISSING.has(spec))
    .map(([key]) => `decision "${key}" needs \`role\` or \`may\` to say who may decide`);
}

/** The type of the event a flow receives when its requester withdraws a waiting request. */
export const WITHDRAW_EVENT = 'baton.withdraw';

/**
 * The event a flow receives when its requester withdraws a request that waits on decisions
 * (`runner.withdraw`, the `baton_withdraw` tool). Handle it in the waiting states to take the
 * flow's withdrawal path, ending in a final state (the request is then `withdrawn`).
 *
 * @example `setup({ types: { events: {} as InputEvents<typeof inputs> | WithdrawEvent } })`
 */
export interface WithdrawEvent {
  readonly type: typeof WITHDRAW_EVENT;
}
