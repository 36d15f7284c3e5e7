/**
 * A ledger with each method of each facet wrapped, for tests that hold or fail calls by method
 * name (the names are unique across facets): `wrapLedgerMethods(ledger, (name, call) => (...args) => call(...args))`
 * returns a `FullLedger` of the same facets whose every method goes through the wrapper;
 * `prune` and `close` are the ledger's own.
 */
import type { FullLedger } from '@baton/engine';

/** The facets of a ledger, by key (every key of `FullLedger` but `prune` and `close`). */
type FacetKey = Exclude<keyof FullLedger, 'prune' | 'close'>;

/** Any method of any facet, by name: `'getRequest'`, `'recordDecision'`, `'claimStep'`, ... */
export type LedgerMethod = { [F in FacetKey]: keyof FullLedger[F] & string }[FacetKey];

type AnyMethod = (...args: unknown[]) => unknown;

/** `ledger` with every facet method replaced by `wrap(name, theMethodBound)`. */
export function wrapLedgerMethods(
  ledger: FullLedger,
  wrap: (name: LedgerMethod, method: AnyMethod) => AnyMethod,
): FullLedger {
  const wrapped: Record<string, unknown> = {};
  for (const [key, facet] of Object.entries(ledger)) {
    if (key === 'prune' || key === 'close' || typeof facet !== 'object' || facet === null) continue;
    const methods: Record<string, AnyMethod> = {};
    for (const name of methodNames(facet)) {
      const method = (facet as unknown as Record<string, AnyMethod>)[name]!.bind(facet);
      methods[name] = wrap(name as LedgerMethod, method);
    }
    wrapped[key] = methods;
  }
  return { ...wrapped, prune: (now: number) => ledger.prune(now), close: () => ledger.close() } as FullLedger;
}

/** A facet's method names: its own function properties, and its prototype's (a class instance's). */
function methodNames(facet: object): string[] {
  const names = new Set<string>();
  for (let at: object | null = facet; at && at !== Object.prototype; at = Object.getPrototypeOf(at)) {
    for (const name of Object.getOwnPropertyNames(at)) {
      if (name !== 'constructor' && typeof (facet as Record<string, unknown>)[name] === 'function') names.add(name);
    }
  }
  return [...names];
}
