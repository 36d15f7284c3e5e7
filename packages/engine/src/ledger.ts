/**
 * The `Ledger` contract: the server-side memory that makes a requestState
 * single-use. The engine defines it and calls it; `@baton/store` implements
 * it (memory, SQLite, PostgreSQL). Everything a ledger stores beyond ids,
 * digests and times is opaque to it: outcomes arrive already sealed by the
 * engine, so a ledger never needs the key ring.
 */

/** What the engine asks a ledger to redeem at the start of a round. */
export interface RedeemRequest {
  /** The envelope's random 96-bit id (base64url, 16 characters). */
  readonly jti: string;
  /** A digest (base64url) of this round's `inputResponses`, canonicalised. */
  readonly responsesDigest: string;
  /** When the envelope expires (ms since epoch): the row may be pruned after it. */
  readonly expiresAt: number;
  /** The current time (ms since epoch), from the engine's clock. */
  readonly now: number;
}

/**
 * The answer to {@link Ledger.redeem}.
 * - `redeemed`: first use; the round runs.
 * - `retry`: the same jti with byte-identical responses was redeemed before and its
 *   outcome recorded; `outcome` is the sealed outcome to answer with again.
 * - `replayed`: used before with other responses, or its first round never recorded an
 *   outcome (it may have had side effects): reject.
 */
export type RedeemResult =
  | { readonly status: 'redeemed' }
  | { readonly status: 'retry'; readonly outcome: string }
  | { readonly status: 'replayed' };

/** Options for {@link Ledger.mintToken}. */
export interface MintTokenRequest {
  /** What the token is for (for example `"access-code"`); redemption must name the same purpose. */
  readonly purpose: string;
  /** When the token stops being redeemable (ms since epoch). */
  readonly expiresAt: number;
  /** Optional opaque data returned on redemption (for example the resource granted). */
  readonly data?: string;
  /** The current time (ms since epoch). */
  readonly now: number;
}

/** The answer to {@link Ledger.redeemToken}. */
export type RedeemTokenResult =
  | { readonly status: 'redeemed'; readonly data: string | undefined }
  | { readonly status: 'already_used' }
  | { readonly status: 'expired' }
  | { readonly status: 'unknown' };

/**
 * At-most-once memory shared by every server instance.
 *
 * Implementations must make {@link Ledger.redeem} and {@link Ledger.redeemToken}
 * atomic across processes: of any number of concurrent calls with one jti or
 * code, exactly one wins.
 */
export interface Ledger {
  /** Redeem an envelope's jti before any side effect of the round. */
  redeem(request: RedeemRequest): Promise<RedeemResult>;
  /** Record the sealed outcome of a redeemed round, for replay-safe retries. */
  recordOutcome(jti: string, sealedOutcome: string): Promise<void>;
  /** Mint a single-use token; returns the code to hand out (only a hash of it is stored). */
  mintToken(request: MintTokenRequest): Promise<string>;
  /** Redeem a single-use token exactly once. */
  redeemToken(code: string, purpose: string, now: number): Promise<RedeemTokenResult>;
  /** Delete rows that expired before `now`; returns how many were removed. */
  prune(now: number): Promise<number>;
  /** Release connections and timers. */
  close(): Promise<void>;
}
