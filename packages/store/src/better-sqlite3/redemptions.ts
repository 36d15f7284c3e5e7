/**
 * The SQLite ledger's `redemptions` facet: a requestState is redeemed by one
 * atomic `INSERT ... ON CONFLICT DO NOTHING RETURNING` (SQLite serialises it
 * across processes: exactly one caller wins; a loser reads the row to say
 * why), its outcome recorded once, and the row released again after an
 * outage. A round without side effects is redeemed with its outcome by the
 * same insert carrying the outcome (one statement; a loser writes nothing). A
 * token is used by one `UPDATE ... WHERE used_at IS NULL ... RETURNING`.
 * Every write goes through the handle's `WriteBatcher`.
 */
import type {
  LedgerRedemptions,
  MintTokenRequest,
  RedeemRequest,
  RedeemResult,
  RedeemTokenResult,
} from '@baton/engine';
import { and, eq, gt, isNull, sql } from 'drizzle-orm';
import { mintTokenParams } from '../core/params.js';
import { conflictResult, isEnvelopeExpired, REDEEMED, REPLAYED, tokenFailure, tokenRedeemed } from '../core/results.js';
import { generateTokenCode, hashTokenCode, MAX_TOKEN_CODE_LENGTH } from '../core/tokens.js';
import { redemptions, tokens } from '../schema/sqlite.js';
import type { SqliteHandle } from './handle.js';

/** The `redemptions` facet over `handle`. */
export function sqliteRedemptions(handle: SqliteHandle): LedgerRedemptions {
  const { db, writes, assertOpen } = handle;
  /** A redemption, with its outcome (`redeemWithOutcome`) or none yet (`redeem`: null). */
  const insertRedemption = db
    .insert(redemptions)
    .values({
      jti: sql.placeholder('jti'),
      responsesDigest: sql.placeholder('digest'),
      outcome: sql.placeholder('outcome'),
      expiresAt: sql.placeholder('expiresAt'),
      redeemedAt: sql.placeholder('now'),
    })
    .onConflictDoNothing()
    .returning({ jti: redemptions.jti })
    .prepare();
  const selectRedemption = db
    .select({
      responsesDigest: redemptions.responsesDigest,
      outcome: redemptions.outcome,
      expiresAt: redemptions.expiresAt,
      redeemedAt: redemptions.redeemedAt,
    })
    .from(redemptions)
    .where(eq(redemptions.jti, sql.placeholder('jti')))
    .prepare();
  const updateOutcome = db
    .update(redemptions)
    .set({ outcome: sql`${sql.placeholder('outcome')}` })
    .where(and(eq(redemptions.jti, sql.placeholder('jti')), isNull(redemptions.outcome)))
    .prepare();
  const deleteUnfinished = db
    .delete(redemptions)
    .where(
      and(
        eq(redemptions.jti, sql.placeholder('jti')),
        eq(redemptions.responsesDigest, sql.placeholder('digest')),
        isNull(redemptions.outcome),
      ),
    )
    .prepare();
  const insertToken = db
    .insert(tokens)
    .values({
      codeHash: sql.placeholder('hash'),
      purpose: sql.placeholder('purpose'),
      data: sql.placeholder('data'),
      expiresAt: sql.placeholder('expiresAt'),
      usedAt: null,
      createdAt: sql.placeholder('now'),
    })
    .prepare();
  const useToken = db
    .update(tokens)
    .set({ usedAt: sql`${sql.placeholder('now')}` })
    .where(
      and(
        eq(tokens.codeHash, sql.placeholder('hash')),
        eq(tokens.purpose, sql.placeholder('purpose')),
        isNull(tokens.usedAt),
        gt(tokens.expiresAt, sql.placeholder('now')),
      ),
    )
    .returning({ data: tokens.data })
    .prepare();
  const selectToken = db
    .select({ purpose: tokens.purpose, expiresAt: tokens.expiresAt, usedAt: tokens.usedAt })
    .from(tokens)
    .where(eq(tokens.codeHash, sql.placeholder('hash')))
    .prepare();

  /** Insert the redemption (with `outcome`, or null) if its jti is new; else why not, from the row. */
  const redeemRow = async (request: RedeemRequest, outcome: string | null): Promise<RedeemResult> => {
    assertOpen();
    if (isEnvelopeExpired(request.expiresAt, request.now)) return REPLAYED;
    const params = {
      jti: request.jti,
      digest: request.responsesDigest,
      outcome,
      expiresAt: request.expiresAt,
      now: request.now,
    };
    return writes.submit(() => {
      if (insertRedemption.get(params) !== undefined) return REDEEMED;
      return conflictResult(selectRedemption.get({ jti: request.jti }), request);
    });
  };

  return {
    redeem: (request: RedeemRequest): Promise<RedeemResult> => redeemRow(request, null),

    redeemWithOutcome: (request: RedeemRequest, sealedOutcome: string): Promise<RedeemResult> =>
      redeemRow(request, sealedOutcome),

    async recordOutcome(jti: string, sealedOutcome: string): Promise<void> {
      assertOpen();
      await writes.submit(() => updateOutcome.run({ jti, outcome: sealedOutcome }));
    },

    async releaseRedemption(jti: string, responsesDigest: string): Promise<boolean> {
      assertOpen();
      return writes.submit(() => deleteUnfinished.run({ jti, digest: responsesDigest }).changes > 0);
    },

    async mintToken(request: MintTokenRequest): Promise<string> {
      assertOpen();
      const code = generateTokenCode();
      const params = mintTokenParams(code, request);
      await writes.submit(() => insertToken.run(params));
      return code;
    },

    async redeemToken(code: string, purpose: string, now: number): Promise<RedeemTokenResult> {
      assertOpen();
      if (code.length > MAX_TOKEN_CODE_LENGTH) return { status: 'unknown' };
      const hash = hashTokenCode(code);
      return writes.submit(() => {
        const won = useToken.get({ hash, purpose, now });
        if (won !== undefined) return tokenRedeemed(won.data);
        return tokenFailure(selectToken.get({ hash }), purpose, now);
      });
    },
  };
}
