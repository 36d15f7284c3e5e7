/**
 * The PostgreSQL ledger on node-postgres, for deployments where many Baton
 * instances share one database behind a load balancer. Same tables and
 * semantics as the SQLite ledger: a redemption is one atomic
 * `INSERT ... ON CONFLICT DO NOTHING RETURNING` (PostgreSQL's unique index
 * makes exactly one concurrent inserter win, on any instance), a token is
 * used by one `UPDATE ... WHERE used_at IS NULL AND expires_at > now
 * RETURNING`. Opening connects and migrates at once, so an unreachable or
 * misconfigured database fails at start-up with a clear error rather than on
 * the first request. Statements are prepared (named) through drizzle.
 */
import type { Ledger, MintTokenRequest, RedeemRequest, RedeemResult, RedeemTokenResult } from '@baton/engine';
import { and, eq, gt, inArray, isNull, lt, sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import { LedgerError } from '../core/errors.js';
import { type PruningOptions, startPruning } from '../core/pruning.js';
import { conflictResult, isEnvelopeExpired, REDEEMED, REPLAYED, tokenFailure, tokenRedeemed } from '../core/results.js';
import { generateTokenCode, hashTokenCode, MAX_TOKEN_CODE_LENGTH } from '../core/tokens.js';
import { redemptions, tokens } from '../schema/pg.js';
import { connectPostgres, type PostgresConnectionOptions } from './connect.js';

export { createPostgresAuditLog, type PostgresAuditLogOptions } from './audit.js';

/**
 * Options for the ledger: give `connectionString` or `pool`, not both
 * (a pool created from the URL has 10 connections unless `maxConnections` says otherwise).
 */
export interface PostgresLedgerOptions extends PruningOptions, PostgresConnectionOptions {}

/** Rows deleted per statement by `prune`. */
const PRUNE_BATCH = 5000;

/**
 * Connect to PostgreSQL, migrate the ledger tables when needed, and return the ledger.
 *
 * Rejects with a `LedgerConnectionError` when the server cannot be reached and a
 * `LedgerSchemaError` when the database was migrated by a newer Baton.
 *
 * @example
 * ```ts
 * import { createPostgresLedger } from '@baton/store/node-postgres';
 *
 * const ledger = await createPostgresLedger({ connectionString: process.env.DATABASE_URL });
 * ```
 */
export async function createPostgresLedger(options: PostgresLedgerOptions): Promise<Ledger> {
  const connection = await connectPostgres(options, {
    what: 'ledger',
    factory: 'createPostgresLedger',
    defaultMaxConnections: 10,
    applicationName: 'baton-ledger',
  });
  const { pool, where } = connection;

  const db = drizzle({ client: pool });
  const insertRedemption = db
    .insert(redemptions)
    .values({
      jti: sql.placeholder('jti'),
      responsesDigest: sql.placeholder('digest'),
      outcome: null,
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
    })
    .from(redemptions)
    .where(eq(redemptions.jti, sql.placeholder('jti')))
    .prepare('baton_redeem_select');
  const updateOutcome = db
    .update(redemptions)
    .set({ outcome: sql`${sql.placeholder('outcome')}` })
    .where(and(eq(redemptions.jti, sql.placeholder('jti')), isNull(redemptions.outcome)))
    .prepare('baton_record_outcome');
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
  // SKIP LOCKED: instances pruning at the same moment take disjoint batches instead of queueing.
  const pruneRedemptions = db
    .delete(redemptions)
    .where(
      inArray(
        redemptions.jti,
        db
          .select({ jti: redemptions.jti })
          .from(redemptions)
          .where(lt(redemptions.expiresAt, sql.placeholder('now')))
          .limit(sql.placeholder('limit'))
          .for('update', { skipLocked: true }),
      ),
    )
    .prepare('baton_prune_redemptions');
  const pruneTokens = db
    .delete(tokens)
    .where(
      inArray(
        tokens.codeHash,
        db
          .select({ codeHash: tokens.codeHash })
          .from(tokens)
          .where(lt(tokens.expiresAt, sql.placeholder('now')))
          .limit(sql.placeholder('limit'))
          .for('update', { skipLocked: true }),
      ),
    )
    .prepare('baton_prune_tokens');

  const ledger: Ledger = {
    async redeem(request: RedeemRequest): Promise<RedeemResult> {
      assertOpen();
      if (isEnvelopeExpired(request.expiresAt, request.now)) return REPLAYED;
      const won = await insertRedemption.execute({
        jti: request.jti,
        digest: request.responsesDigest,
        expiresAt: request.expiresAt,
        now: request.now,
      });
      if (won.length > 0) return REDEEMED;
      const [row] = await selectRedemption.execute({ jti: request.jti });
      return conflictResult(row, request);
    },

    async recordOutcome(jti: string, sealedOutcome: string): Promise<void> {
      assertOpen();
      await updateOutcome.execute({ jti, outcome: sealedOutcome });
    },

    async mintToken(request: MintTokenRequest): Promise<string> {
      assertOpen();
      const code = generateTokenCode();
      await insertToken.execute({
        hash: hashTokenCode(code),
        purpose: request.purpose,
        data: request.data ?? null,
        expiresAt: request.expiresAt,
        now: request.now,
      });
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

    async prune(now: number): Promise<number> {
      assertOpen();
      let removed = 0;
      for (const statement of [pruneRedemptions, pruneTokens]) {
        for (;;) {
          if (connection.closed) return removed;
          const result = await statement.execute({ now, limit: PRUNE_BATCH });
          const count = result.rowCount ?? 0;
          removed += count;
          if (count < PRUNE_BATCH) break;
        }
      }
      return removed;
    },

    async close(): Promise<void> {
      if (connection.closed) return;
      await schedule.stop();
      await connection.close();
    },
  };

  const schedule = startPruning((now) => ledger.prune(now), options);
  return ledger;

  function assertOpen(): void {
    if (connection.closed) throw new LedgerError(`The PostgreSQL ledger ${where} is closed`);
  }
}

/** A printable description of a caller's pool (no password). */
