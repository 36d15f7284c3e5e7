/**
 * The scheduler's fire: durable timers of parked instances, with no client
 * present. It claims the waiting requests whose earliest timer is due (a
 * lease in the ledger, so of any number of instances polling one ledger one
 * fires each request, and a crashed one's claim is taken over once its lease
 * ends), then plays one round on each from its latest parked state, exactly
 * as a decider's round does (`decisions/advance.ts`): the due deadlines fire
 * first, the flow runs to its next wait or its end, and the result is
 * written back by compare-and-set on the request's version, so a timer fired
 * twice (a lost lease, a racing decider) advances the flow once. The round
 * answers nobody: what it came to is parked for the requester's next
 * `baton_resume`. Audited with `via: 'timer'`.
 */
import type { DueRequest } from '../contract/ledger.js';
import { advance } from '../decisions/advance.js';
import type { DecisionsPort } from '../decisions/port.js';

/** The principal the audit trail records for the scheduler's rounds (hashed like any other). */
export const SCHEDULER_PRINCIPAL = 'baton:scheduler';

/** Options of one fire (`runner.fireDueTimers()`). */
export interface FireOptions {
  /** Requests claimed per call, at most (default 100). */
  readonly limit?: number;
  /** How long a claim holds before another instance may take it over, ms (default 30,000). */
  readonly leaseMs?: number;
}

/** What one fire did. */
export interface FireReport {
  /** Requests claimed (their timer was due). */
  readonly claimed: number;
  /** Of those, rounds played and written (the flow moved on or ended). */
  readonly fired: number;
  /** For each claimed request, how late its timer fired, ms (now minus due time). */
  readonly lagMs: readonly number[];
}

/** The scheduler's owner id and the runner's port, for {@link fireDueTimers}. */
export interface SchedulerPort {
  readonly core: DecisionsPort;
  /** An opaque id for this runner's claims. */
  readonly owner: string;
}

/**
 * Fire the due timers of parked instances once: claim what is due, play each, write it back.
 * Never throws for one request's failure (it is logged; its claim lapses and it is tried again).
 * @throws Error when the runner has no ledger; LedgerFacetMissingError when its ledger has no
 * `schedule` facet (declare it in `RunnerOptions.ledgerFacets` to have createRunner check it).
 */
export async function fireDueTimers(port: SchedulerPort, options: FireOptions = {}): Promise<FireReport> {
  const { core, owner } = port;
  const ledger = core.ledger;
  if (!ledger) throw new Error('fireDueTimers needs a ledger with a scheduler');
  const now = core.now();
  const claimed: DueRequest[] = await ledger.schedule.claimDueRequests({
    owner,
    now,
    leaseUntil: now + (options.leaseMs ?? 30_000),
    limit: options.limit ?? 100,
  });
  let fired = 0;
  const lagMs: number[] = [];
  for (const due of claimed) {
    const flow = core.flows.get(due.flow);
    if (!flow) continue; // Served by another instance: its claim lapses and that instance fires it.
    lagMs.push(Math.max(0, core.now() - due.dueAt));
    try {
      const result = await advance(core, flow, due.id, SCHEDULER_PRINCIPAL, 'timer');
      if (result && result.type !== 'conflict') fired++;
    } catch (error) {
      core.log({ type: 'flow_error', flow: flow.name, fid: due.id, error });
    }
  }
  return { claimed: claimed.length, fired, lagMs };
}
