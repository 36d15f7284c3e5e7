/**
 * The facets every built-in ledger assembles (`FullLedger` less `health`,
 * which `withStats` adds), and one way to wrap every method of every facet
 * at once: `withStats` counts failed calls through it and the PostgreSQL
 * ledger maps connection failures to `LedgerUnavailableError` through it. A
 * wrapped facet keeps its methods' behaviour (`this` is the original facet),
 * except for what the wrapper does to the promise each call returns.
 *
 * ```ts
 * const guarded = wrapFacets(ledger, (call) => call().catch(toUnavailable));
 * // guarded.decisions.recordVote(vote) === ledger.decisions.recordVote(vote), guarded
 * ```
 */
import type { FullLedger } from '@baton/engine';

/** A built-in ledger before `withStats` adds its `health` facet. */
export type UncountedLedger = Omit<FullLedger, 'health'>;

/** The keys of an {@link UncountedLedger}'s facets (every key but `prune` and `close`). */
export const FACET_KEYS = [
  'redemptions',
  'requests',
  'decisions',
  'steps',
  'runs',
  'schedule',
  'outbox',
  'events',
] as const;

/** Wraps one call: `call()` runs the original method with the caller's arguments. */
export type CallWrapper = (call: () => Promise<unknown>) => Promise<unknown>;

/** `facet` with every method's call passed through `wrap` (non-function entries are dropped). */
export function wrapMethods<F extends object>(facet: F, wrap: CallWrapper): F {
  const wrapped: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(facet) as [string, (...args: unknown[]) => Promise<unknown>][]) {
    if (typeof method !== 'function') continue;
    wrapped[name] = (...args: unknown[]) => wrap(() => method.apply(facet, args));
  }
  return wrapped as F;
}

/** `ledger` with every facet's methods and `prune` passed through `wrap`; `close` is left as it is. */
export function wrapFacets<L extends UncountedLedger>(ledger: L, wrap: CallWrapper): UncountedLedger {
  const facets = Object.fromEntries(FACET_KEYS.map((key) => [key, wrapMethods(ledger[key], wrap)])) as Pick<
    UncountedLedger,
    (typeof FACET_KEYS)[number]
  >;
  return {
    ...facets,
    prune: (now) => wrap(() => ledger.prune(now)) as Promise<number>,
    close: () => ledger.close(),
  };
}
