/**
 * The shape of a defined flow, as types only: what an author passes to
 * `defineFlow` (`FlowConfig`), what it returns (`Flow`), and the migrations and
 * tool annotations a flow carries. `flow.ts` builds flows; the graph model
 * (`graph.ts`), the round, the decision tools and the runner read this shape
 * without importing `defineFlow`, so `flow.ts` and `graph.ts` do not import
 * each other.
 */
import type { AnyStateMachine, ContextFrom, InputFrom, OutputFrom, StateValue } from 'xstate';
import type { z } from 'zod';
import type { FlowResult } from '../contract/outcome.js';
import type { InputCatalog } from './inputs/catalog.js';
import type { FlowServices } from './services.js';

/** The persisted part of a machine state a migration rewrites. */
export interface PersistedState<TContext = unknown> {
  value: StateValue;
  context: TContext;
}

/** Rewrites a state minted by an older definition into one the current machine accepts. */
export type Migration<TContext = unknown> = (state: PersistedState<any>) => PersistedState<TContext>;

/** MCP tool annotations passed through to `tools/list`. */
export interface FlowAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/**
 * Suggests values for one argument of a flow as the user types it (MCP `completion/complete`,
 * for a flow served as a prompt or as a resource template): `value` is what is typed so far,
 * `context.arguments` the other arguments already given (strings, as on the wire). At most 100
 * suggestions are sent.
 *
 * @example `(value) => ['paris', 'park', 'party'].filter((v) => v.startsWith(value))`
 */
export type ArgumentCompleter = (
  value: string,
  context: { readonly arguments: Readonly<Record<string, string>> },
) => readonly string[] | Promise<readonly string[]>;

/**
 * A flow's own app for an MCP Apps host ({@link FlowConfig.app}): one static HTML document
 * (`html`, the same bytes for every run: no run's data is ever in it) that the flow's tool
 * declares in place of Baton's run-status app, and the data it gets, by state: while a run is
 * in one of `states` (a state's path, `deciding.manager` for a nested one), the run's status
 * carries `app: { state, data }` with `data` computed from the machine's context (typed by it;
 * JSON). The document speaks the MCP Apps view protocol itself and reads the run with
 * `baton_run_status` through its host (`docs/mcp-apps.md`).
 */
export interface FlowApp<TContext = unknown> {
  /** The app's HTML5 document (starts with `<!doctype html>`). */
  readonly html: string;
  /** Its name in `resources/list`. Default: the flow's title, else its name. */
  readonly title?: string;
  /** The app's data while a run is in a state, by the state's path. */
  readonly states: Readonly<Record<string, (context: TContext) => unknown>>;
}

/** A JSON Schema object (any draft; MCP lists 2020-12 by default). */
export type JsonSchemaObject = Readonly<Record<string, unknown>>;

/** What an author passes to {@link defineFlow}. */
export interface FlowConfig<TMachine extends AnyStateMachine, TInputs extends InputCatalog> {
  /** Tool / prompt name: 1-64 of `[A-Za-z0-9_.-]`. */
  name: string;
  /** Human title. */
  title?: string;
  /** What the flow does (becomes the tool description). */
  description: string;
  /** Arguments schema; its output is the machine's `input`. Must be a `z.object`. */
  args: z.ZodType<InputFrom<TMachine>>;
  /** The inputs the machine's states may ask for. */
  inputs: TInputs;
  /** The machine, built with `setup()`. Give every `invoke` an explicit `id`. */
  machine: TMachine;
  /**
   * Map the machine's output to a result: a string (one text block) or a `FlowResult` with content
   * of any kind (`text()`, `image()`, `audio()`, `embeddedResource()`, `resourceLink()`), and
   * `isError: true` for a tool error result. Default: strings become text, objects JSON text +
   * structuredContent.
   */
  result?: (output: OutputFrom<TMachine>) => FlowResult | string;
  /**
   * The JSON Schema listed as the flow's input schema (`tools/list`) instead of the one derived
   * from `args`: for keywords zod does not produce (`$defs` with `$anchor`, `allOf`/`anyOf`,
   * `if`/`then`/`else`, …). Listed verbatim; `args` still validates every call, so keep the two
   * in agreement. Must describe an object (`type: 'object'`).
   */
  inputSchema?: JsonSchemaObject;
  /** Completers of arguments by name (see {@link ArgumentCompleter}); each must name an argument of `args`. */
  complete?: Readonly<Record<string, ArgumentCompleter>>;
  /** Migrations keyed by the definition hash they upgrade from. */
  migrations?: Record<string, Migration<ContextFrom<TMachine>>>;
  /** Tool annotations. */
  annotations?: FlowAnnotations;
  /** Record answer values (not only keys and actions) in the audit trail. Off by default. */
  auditValues?: boolean;
  /**
   * One line that says what a run is about, from the machine's context (e.g.
   * `(ctx) => \`Expense of ${ctx.amount} for ${ctx.purpose}\``): the run-status app shows it to the
   * requester above the run's state (`docs/mcp-apps.md`). Read on the parked context, never
   * written; a function that throws or returns something other than a string shows no summary.
   * Only the requester reads it. Default: none.
   */
  summary?: (context: ContextFrom<TMachine>) => string;
  /**
   * The flow's own app for MCP Apps hosts, with typed data from the context for some of its
   * states ({@link FlowApp}). Default: none (the flow's tool declares Baton's run-status app).
   */
  app?: FlowApp<ContextFrom<TMachine>>;
  /**
   * Context paths (dot-separated, e.g. `'code'` or `'account.token'`) that hold secrets: their
   * values never reach an inspector (redacted to `'[redacted]'`, as are the outputs of the
   * machine's invoked actors, which is how such values enter the context, and any other string
   * equal to one). Mark secret answers with `form({ sensitive: true })`.
   */
  sensitive?: readonly string[];
  /**
   * The flow cannot work without a ledger (it mints or redeems single-use tokens, say). A runner
   * without a ledger answers every round of it with an error saying so, and `baton serve`
   * without `--ledger` leaves it out with a warning. Off by default; on for a flow that declares
   * a `decision` (its instances are parked in the ledger while they wait) and for one with
   * durable steps (`step()`: without a ledger a replayed round would run them again), unless
   * the runner has `allowReplays`.
   */
  needsLedger?: boolean;
  /**
   * Bind the machine's placeholder actors/actions to runtime services
   * (`machine.provide(implement(services))`), e.g. minting single-use tokens.
   */
  implement?: (services: FlowServices) => Parameters<TMachine['provide']>[0];
}

/**
 * A defined flow, ready for a runner. `TArgs` is what a caller passes (the input type of the
 * args schema, before defaults and transforms); only types read it (the test kit's `start()`).
 */
export interface Flow<
  TMachine extends AnyStateMachine = AnyStateMachine,
  TInputs extends InputCatalog = InputCatalog,
  TArgs = InputFrom<TMachine>,
> {
  readonly name: string;
  readonly title: string | undefined;
  readonly description: string;
  readonly args: z.ZodObject;
  readonly inputs: TInputs;
  readonly machine: TMachine;
  /** Hash of the machine definition and the input catalog (base64url, 128 bit). */
  readonly hash: string;
  readonly migrations: Readonly<Record<string, Migration<ContextFrom<TMachine>>>>;
  readonly annotations: FlowAnnotations | undefined;
  /** Whether the audit trail records answer values. */
  readonly auditValues: boolean;
  /** The run's summary line from its context ({@link FlowConfig.summary}), when the author gave one. */
  readonly summary?: (context: ContextFrom<TMachine>) => string;
  /** The flow's own app ({@link FlowConfig.app}), when the author gave one. */
  readonly app?: FlowApp<ContextFrom<TMachine>>;
  /** Context paths whose values never reach an inspector ({@link FlowConfig.sensitive}). */
  readonly sensitive: readonly string[];
  /**
   * Whether the flow can only be served by a runner with a ledger ({@link FlowConfig.needsLedger});
   * always `true` for a flow that declares a decision.
   */
  readonly needsLedger: boolean;
  /** The keys of the decisions the flow declares (someone other than the caller answers them); often empty. */
  readonly decisions: readonly string[];
  /**
   * The keys of the events the flow declares (`event()` inputs: another system sends them); often
   * empty. A flow that reaches a wait for one needs a ledger (a flow that never does, needs none).
   */
  readonly events: readonly string[];
  /** The ids of the durable steps (`step()`) in the machine's `setup({ actors })`; often empty. */
  readonly steps: readonly string[];
  /** The machine with runtime services bound (what a runner executes). */
  machineWith(services: FlowServices): TMachine;
  /** Build the result of a finished run. */
  toResult(output: unknown): FlowResult;
  /** The listed JSON Schema of the arguments, when the author gave one ({@link FlowConfig.inputSchema}). */
  readonly inputSchema?: JsonSchemaObject;
  /** Completers of arguments by name ({@link FlowConfig.complete}); often empty. */
  readonly completers: Readonly<Record<string, ArgumentCompleter>>;
  /** Phantom: the arguments' input type (never set). */
  readonly __args?: TArgs;
}
