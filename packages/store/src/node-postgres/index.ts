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
import pg from 'pg';
import { describeError, LedgerConnectionError, LedgerError, redactUrl } from '../core/errors.js';
import { type PruningOptions, startPruning } from '../core/pruning.js';
import { conflictResult, isEnvelopeExpired, REDEEMED, REPLAYED, tokenFailure, tokenRedeemed } from '../core/results.js';
import { generateTokenCode, hashTokenCode, MAX_TOKEN_CODE_LENGTH } from '../core/tokens.js';
import { redemptions, tokens } from '../schema/pg.js';
import { migratePostgres } from './migrate.js';

/** Options for {@link createPostgresLedger}: give `connectionString` or `pool`, not both. */
export interface PostgresLedgerOptions extends PruningOptions {
  /** `postgres://user:password@host:port/database` (any libpq-style URL node-postgres accepts). */
  readonly connectionString?: string;
  /** An existing pool to use instead; the ledger never ends it (you do, after `close()`). */
  readonly pool?: pg.Pool;
  /** Pool size when the ledger creates the pool. Default 10. */
  readonly maxConnections?: number;
  /** How long to wait for a connection, in ms, when the ledger creates the pool. Default 5000. */
  readonly connectTimeoutMs?: number;
  /** How long to wait for another instance's migration to finish, in ms. Default 60 000. */
  readonly migrationLockTimeoutMs?: number;
}

/** Rows deleted per statement by `prune`. */
const PRUNE_BATCH = 5000;

/**
 * Connect to PostgreSQL, migrate the ledger tables when needed, and return the ledger.
 *
 * Rejects with a `LedgerConnectionError` when the server cannot be reached and a
 * `LedgerSchemaError` when the database was migrated by a newer Baton.
 *
 * @example
 * const ledger = await createPostgresLedger({ connectionString: process.env.DATABASE_URL });
 */
export async function createPostgresLedger(options: PostgresLedgerOptions): Promise<Ledger> {
  if ((options?.connectionString === undefined) === (options?.pool === undefined)) {
    throw new LedgerError('createPostgresLedger needs exactly one of `connectionString` or `pool`');
  }
  const ownsPool = options.pool === undefined;
  const where =
    options.connectionString !== undefined ? redactUrl(options.connectionString) : describePool(options.pool!);
  const pool =
    options.pool ??
    new pg.Pool({
      connectionString: options.connectionString,
      max: options.maxConnections ?? 10,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
      application_name: 'baton-ledger',
    });
  let closed = false;
  if (ownsPool) {
    // An idle connection dropped by the server must not crash the process; the next query
    // reconnects. After close(), connections still saying goodbye may report the server's
    // shutdown: not worth a line.
    pool.on('error', (error) => {
      if (closed) return;
      console.error(`[baton/store] PostgreSQL ledger ${where}: idle connection error:`, describeError(error));
    });
  }

  try {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      throw new LedgerConnectionError(`Cannot connect to the PostgreSQL ledger at ${where}: ${describeError(error)}`, {
        cause: error,
      });
    }
    try {
      await migratePostgres(client, where, options.migrationLockTimeoutMs ?? 60_000);
    } finally {
      client.release();
    }
  } catch (error) {
    closed = true;
    if (ownsPool) await pool.end().catch(() => {});
    throw error;
  }

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
          if (closed) return removed;
          const result = await statement.execute({ now, limit: PRUNE_BATCH });
          const count = result.rowCount ?? 0;
          removed += count;
          if (count < PRUNE_BATCH) break;
        }
      }
      return removed;
    },

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await schedule.stop();
      if (ownsPool) await pool.end();
    },
  };

  const schedule = startPruning((now) => ledger.prune(now), options);
  return ledger;

  function assertOpen(): void {
    if (closed) throw new LedgerError(`The PostgreSQL ledger ${where} is closed`);
  }
}

/** A printable description of a caller's pool (no password). */
function describePool(pool: pg.Pool): string {
  const o = pool.options as pg.PoolConfig;
  if (o.connectionString) return redactUrl(o.connectionString);
  return `postgres://${o.host ?? 'localhost'}:${o.port ?? 5432}/${o.database ?? ''}`;
}
