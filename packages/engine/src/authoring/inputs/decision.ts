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

/** The event payload (without `type`) of a decision: always accepted, with who decided. */
export interface DecisionAnswer<T> {
  readonly action: 'accept';
  readonly content: T;
  /** The deciding principal's id (never the requester's: the engine enforces four eyes). */
  readonly decider: string;
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
}

/** Whether a declared input is a decision. */
export function isDecision(spec: InputSpec<any, any> | undefined): spec is DecisionSpec<any, any> {
  return spec?.kind === 'decision';
}

const ROLE = /^[A-Za-z0-9_.:-]{1,64}$/;

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
 * @throws FlowDefinitionError without `role` or `may`, for a role that is not 1-64 of `[A-Za-z0-9_.:-]`,
 *   or a schema that cannot be expressed as an elicitation form.
 */
export function decision<TSchema extends z.ZodObject, TContext = any>(options: {
  message: FromContext<string, TContext>;
  schema: TSchema;
  role?: string;
  may?: (args: MayDecideArgs<TContext>) => boolean;
}): DecisionSpec<z.output<TSchema>, TContext> {
  const { role, may } = options;
  if (role === undefined && may === undefined) {
    throw new FlowDefinitionError('a decision needs `role` or `may` to say who may decide');
  }
  if (role !== undefined && !ROLE.test(role)) {
    throw new FlowDefinitionError(`decision role "${role}" must be 1-64 characters of [A-Za-z0-9_.:-]`);
  }
  const asForm = form({ message: options.message, schema: options.schema });
  const requestedSchema = toElicitationSchema(options.schema);
  return {
    kind: 'decision',
    fallback: false,
    onlyWhenAsked: true,
    role,
    requestedSchema,
    shape: { kind: 'decision', requestedSchema, role: role ?? null, may: may ? `fn:${may.toString()}` : null },
    message: (context) => resolve(options.message, context),
    // What the decider is shown (the decision tools ask it under the key `decision`).
    build: (context, note) => asForm.build(context, note),
    // A caller never answers a decision: its answers are never read (the round asks only the caller's keys).
    parse: () => ({ ok: false, problem: 'a decision is made through the decision tools, not by the caller' }),
    parseAnswer: (raw) => asForm.parse(raw),
    oversized: never,
    mayDecide(args) {
      if (role !== undefined && !args.roles.includes(role)) return false;
      if (may === undefined) return true;
      try {
        return may(args) === true;
      } catch {
        return false;
      }
    },
  };
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
