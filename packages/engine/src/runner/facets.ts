/**
 * The one check of a ledger's facets. `createRunner` works out, from the flows
 * it serves and the options it is given, which facets of `Ledger` they need (a
 * decision state: `decisions`; an event wait: `events`; durable steps: `steps`,
 * whenever a ledger is given and a flow declares steps; `outbox: true`:
 * `outbox`; the `ledgerFacets` option: what the caller's own features use, such
 * as a scheduler's `schedule`, `baton runs`' `runs`, `/metrics`' `health`), and
 * refuses a ledger without one of them with `LedgerFacetMissingError`, naming
 * the facet and what needs it. It then hands the runner's parts a `FullLedger`
 * in which every absent facet is an object whose methods throw that same
 * error: after the check no feature reaches one, and no feature asks whether
 * a method exists. Changes when a feature comes to need a facet.
 */
import type { Flow } from '../authoring/flowTypes.js';
import type { FullLedger, Ledger, LedgerFacet } from '../contract/ledger.js';
import { LedgerFacetMissingError } from '../errors.js';

/** Each optional facet's methods, for the stand-ins of absent facets. */
const FACET_METHODS: { readonly [F in LedgerFacet]: readonly (keyof FullLedger[F])[] } = {
  decisions: [
    'requestDecisions',
    'listDecisions',
    'recordDecision',
    'recordVote',
    'listVotes',
    'closeDecisions',
    'handDecision',
    'setDelegation',
    'listDelegations',
    'removeDelegation',
    'rewriteLegacyDeciders',
  ],
  steps: ['claimStep', 'recordStep', 'getStep', 'reopenStep'],
  runs: ['listRuns', 'listSteps'],
  schedule: ['claimDueRequests', 'schedulerStats'],
  outbox: ['enqueueOutbox', 'claimOutbox', 'settleOutbox'],
  events: ['recordEvent', 'getEvent', 'settleEvent', 'eventWaiters', 'recentEvents'],
  health: ['stats', 'ping'],
};

/** Every optional facet, in the contract's order. */
export const LEDGER_FACETS = Object.keys(FACET_METHODS) as readonly LedgerFacet[];

/** What the check reads: the served flows and the options that need a facet. */
export interface FacetNeeds {
  readonly flows: Iterable<Flow<any, any>>;
  /** `RunnerOptions.outbox`. */
  readonly outbox?: boolean;
  /** `RunnerOptions.ledgerFacets`: facets the caller's own features use. */
  readonly ledgerFacets?: readonly LedgerFacet[];
}

/**
 * The facets `needs` requires, each with the first flow or option that needs it, e.g.
 * `Map { 'decisions' => 'flow "refund" (a decision state)', 'outbox' => 'option outbox' }`.
 */
export function neededFacets(needs: FacetNeeds): ReadonlyMap<LedgerFacet, string> {
  const needed = new Map<LedgerFacet, string>();
  const need = (facet: LedgerFacet, by: string) => {
    if (!needed.has(facet)) needed.set(facet, by);
  };
  for (const flow of needs.flows) {
    if (flow.decisions.length > 0) need('decisions', `flow "${flow.name}" (a decision state)`);
    if (flow.events.length > 0) need('events', `flow "${flow.name}" (an event wait)`);
    if (flow.steps.length > 0) need('steps', `flow "${flow.name}" (durable steps)`);
  }
  if (needs.outbox === true) need('outbox', 'option outbox');
  for (const facet of needs.ledgerFacets ?? []) need(facet, `option ledgerFacets ("${facet}")`);
  return needed;
}

/**
 * Check once that `ledger` has every facet `needs` requires, and return it as a {@link FullLedger}
 * whose absent facets throw {@link LedgerFacetMissingError} from every method (unreachable after
 * the check). `ledger` itself is returned when it has every facet.
 * @throws LedgerFacetMissingError naming the first missing facet and what needs it.
 */
export function checkLedgerFacets(ledger: Ledger, needs: FacetNeeds): FullLedger {
  for (const [facet, neededBy] of neededFacets(needs)) {
    if (ledger[facet] === undefined) throw new LedgerFacetMissingError(facet, neededBy);
  }
  return fullLedger(ledger);
}

/** Whether `ledger` holds `facet` (read once, by `createRunner`, for work it may skip). */
export function hasFacet(ledger: Ledger, facet: LedgerFacet): boolean {
  return ledger[facet] !== undefined;
}

/** `ledger` with a throwing stand-in for each facet it does not hold. */
export function fullLedger(ledger: Ledger): FullLedger {
  if (LEDGER_FACETS.every((facet) => ledger[facet] !== undefined)) return ledger as FullLedger;
  const absent = (facet: LedgerFacet) =>
    Object.fromEntries(
      FACET_METHODS[facet].map((method) => [
        method,
        () => {
          throw new LedgerFacetMissingError(facet, `${String(method)} (not declared at createRunner)`);
        },
      ]),
    );
  const filled: Record<string, unknown> = {};
  for (const facet of LEDGER_FACETS) filled[facet] = ledger[facet] ?? absent(facet);
  // Bind prune and close to the ledger: a class-based ledger keeps its `this`.
  return {
    redemptions: ledger.redemptions,
    requests: ledger.requests,
    ...filled,
    prune: (now: number) => ledger.prune(now),
    close: () => ledger.close(),
  } as FullLedger;
}
