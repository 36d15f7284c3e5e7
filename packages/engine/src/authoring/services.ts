/**
 * What a runner offers flows at run time, beyond their arguments: the clock
 * and, when a ledger is configured, single-use tokens. A flow reaches them by
 * binding its machine's placeholder actors in `defineFlow({ implement })`,
 * the XState `machine.provide()` way, so the machine stays pure and testable.
 */

import type { FullLedger, RedeemTokenResult } from '../contract/ledger.js';
import { FlowError } from '../errors.js';

/** Single-use tokens on the runner's ledger (for example a one-time access code). */
export interface TokenService {
  /** Mint a code redeemable once for `purpose` within `ttlSeconds`; `data` comes back on redemption. */
  mint(options: { purpose: string; ttlSeconds: number; data?: string }): Promise<string>;
  /** Redeem a code exactly once, across every server sharing the ledger. */
  redeem(code: string, purpose: string): Promise<RedeemTokenResult>;
}

/** Services handed to a flow's `implement` hook. */
export interface FlowServices {
  /** The runner's clock, ms since epoch. */
  readonly now: () => number;
  /** Single-use tokens; throws a `FlowError` saying so when the runner has no ledger. */
  readonly tokens: TokenService;
}

/** Build the services of a runner. */
export function createFlowServices(ledger: FullLedger | undefined, now: () => number): FlowServices {
  const need = (): FullLedger => {
    if (!ledger) {
      throw new FlowError(
        'This flow uses single-use tokens, which need a ledger: the server must run with one (baton serve --ledger).',
      );
    }
    return ledger;
  };
  return {
    now,
    tokens: {
      mint: ({ purpose, ttlSeconds, data }) =>
        need().redemptions.mintToken({
          purpose,
          expiresAt: now() + ttlSeconds * 1000,
          now: now(),
          ...(data ? { data } : {}),
        }),
      redeem: (code, purpose) => need().redemptions.redeemToken(code, purpose, now()),
    },
  };
}
