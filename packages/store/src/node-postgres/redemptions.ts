/**
 * The PostgreSQL ledger's `redemptions` facet: a requestState is redeemed by
 * one atomic `INSERT ... ON CONFLICT DO NOTHING RETURNING` (the unique index
 * makes exactly one concurrent inserter win, on any instance), batched with
 * concurrent ones by default (`redemptionBatches.ts`); its outcome is
 * recorded once, and a redemption released, retried through connection
 * failures for up to 15 s (its round has already run). A round without side
 * effects is redeemed with its outcome in one write: the same insert with the
 * outcome set (a row of the batch's insert, or unbatched its own
 * `INSERT ... ON CONFLICT DO NOTHING RETURNING`; a loser writes nothing and
 * reads the row). A token is used by one
 * `UPDATE ... WHERE used_at IS NULL AND expires_at > now RETURNING`.
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
import { redemptions, tokens } from '../schema/pg.js';
import type { PostgresHandle } from './handle.js';
import { OUTCOME_RETRY_BUDGET_MS, retryWhileUnavailable } from './unavailable.js';

/** The `redemptions` facet over `handle`. */
export function postgresRedemptions(handle: PostgresHandle): LedgerRedemptions {
  const { connection, db, batches, assertOpen } = handle;
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
    .prepare('baton_redeem_insert');
  const selectRedemption = db
    .select({
      responsesDigest: redemptions.responsesDigest,
      outcome: redemptions.outcome,
      expiresAt: redemptions.expiresAt,
      redeemedAt: redemptions.redeemedAt,
    })
    .from(redemptions)
    .where(eq(redemptions.jti, sql.placeholder('jti')))
    .prepare('baton_redeem_select');
  const updateOutcome = db
    .update(redemptions)
    .set({ outcome: sql`${sql.placeholder('outcome')}` })
    .where(and(eq(redemptions.jti, sql.placeholder('jti')), isNull(redemptions.outcome)))
    .prepare('baton_record_outcome');
  const deleteUnfinished = db
    .delete(redemptions)
    .where(
      and(
        eq(redemptions.jti, sql.placeholder('jti')),
        eq(redemptions.responsesDigest, sql.placeholder('digest')),
        isNull(redemptions.outcome),
      ),
    )
    .returning({ jti: redemptions.jti })
    .prepare('baton_release_redemption');
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
    .prepare('baton_mint_token');
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
    .prepare('baton_use_token');
  const selectToken = db
    .select({ purpose: tokens.purpose, expiresAt: tokens.expiresAt, usedAt: tokens.usedAt })
    .from(tokens)
    .where(eq(tokens.codeHash, sql.placeholder('hash')))
    .prepare('baton_select_token');

  /** Insert the redemption (with `outcome`, or null) if its jti is new; else why not, from the row. */
  const redeemRow = async (request: RedeemRequest, outcome: string | null): Promise<RedeemResult> => {
    assertOpen();
    if (isEnvelopeExpired(request.expiresAt, request.now)) return REPLAYED;
    if (batches) return batches.redeem(request, outcome);
    const won = await insertRedemption.execute({
      jti: request.jti,
      digest: request.responsesDigest,
      outcome,
      expiresAt: request.expiresAt,
      now: request.now,
    });
    if (won.length > 0) return REDEEMED;
    const [row] = await selectRedemption.execute({ jti: request.jti });
    return conflictResult(row, request);
  };

  return {
    redeem: (request: RedeemRequest): Promise<RedeemResult> => redeemRow(request, null),

    redeemWithOutcome: (request: RedeemRequest, sealedOutcome: string): Promise<RedeemResult> =>
      redeemRow(request, sealedOutcome),

    async recordOutcome(jti: string, sealedOutcome: string): Promise<void> {
      assertOpen();
      // The round's effects have happened: a database restarting must not lose its outcome.
      await retryWhileUnavailable(
        async () => {
          if (batches) await batches.recordOutcome(jti, sealedOutcome);
          else await updateOutcome.execute({ jti, outcome: sealedOutcome });
        },
        OUTCOME_RETRY_BUDGET_MS,
        () => connection.closed,
      );
    },

    async releaseRedemption(jti: string, responsesDigest: string): Promise<boolean> {
      assertOpen();
      // Called because the database just failed mid-round: retried while it restarts, like an outcome.
      const deleted = await retryWhileUnavailable(
        () => deleteUnfinished.execute({ jti, digest: responsesDigest }),
        OUTCOME_RETRY_BUDGET_MS,
        () => connection.closed,
      );
      return deleted.length > 0;
    },

    async mintToken(request: MintTokenRequest): Promise<string> {
      assertOpen();
      const code = generateTokenCode();
      await insertToken.execute(mintTokenParams(code, request));
      return code;
    },

    async redeemToken(code: string, purpose: string, now: number): Promise<RedeemTokenResult> {
      assertOpen();
      if (code.length > MAX_TOKEN_CODE_LENGTH) return { status: 'unknown' };
      const hash = hashTokenCode(code);
      const [won] = await useToken.execute({ hash, purpose, now });
      if (won !== undefined) return tokenRedeemed(won.data);
      const [row] = await selectToken.execute({ hash });
      return tokenFailure(row, purpose, now);
    },
  };
}
