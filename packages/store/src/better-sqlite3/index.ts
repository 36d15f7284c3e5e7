/**
 * The SQLite ledger on better-sqlite3: the embedded default, one file that
 * several processes on the same host may share. The file runs in WAL mode
 * with `synchronous = NORMAL` (a committed redemption survives a process
 * crash; only an OS crash or power loss can drop the last commits) and a busy
 * timeout so writers queue instead of failing. A redemption is decided by
 * one atomic statement (`INSERT ... ON CONFLICT DO NOTHING RETURNING`, or an
 * `UPDATE ... WHERE used_at IS NULL ... RETURNING` for tokens), which SQLite
 * serialises across processes: exactly one caller wins. Statements are
 * prepared once through drizzle, and writes issued in the same event-loop
 * turn share one commit (`writeBatcher.ts`). WAL needs shared memory, so
 * never put the file on a network filesystem.
 */
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { Ledger, MintTokenRequest, RedeemRequest, RedeemResult, RedeemTokenResult } from '@baton/engine';
import { and, eq, gt, inArray, isNull, lt, sql } from 'drizzle-orm';
import { LedgerError } from '../core/errors.js';
import { type PruningOptions, startPruning } from '../core/pruning.js';
import { conflictResult, isEnvelopeExpired, REDEEMED, REPLAYED, tokenFailure, tokenRedeemed } from '../core/results.js';
import { generateTokenCode, hashTokenCode, MAX_TOKEN_CODE_LENGTH } from '../core/tokens.js';
import { redemptions, tokens } from '../schema/sqlite.js';
import { openMigratedSqlite } from './file.js';
import { WriteBatcher } from './writeBatcher.js';

export { createSqliteAuditLog, type SqliteAuditLogOptions } from './audit.js';

/** Options for {@link createSqliteLedger}. */
export interface SqliteLedgerOptions extends PruningOptions {
  /** The database file; created (with its folder) when missing. */
  readonly path: string;
  /** How long a writer waits for another process's write lock, in ms. Default 5000. */
  readonly busyTimeoutMs?: number;
}

/** Rows deleted per statement by `prune`, so other writers are never blocked for long. */
const PRUNE_BATCH = 2000;

/**
 * Open (creating and migrating when needed) the SQLite ledger at `options.path`.
 *
 * Throws a {@link LedgerError} when the file cannot be opened, and a
 * `LedgerSchemaError` when it was migrated by a newer Baton.
 *
 * @example
 * ```ts
 * import { createSqliteLedger } from '@baton/store/better-sqlite3';
 *
 * const ledger = createSqliteLedger({ path: './data/baton-ledger.db' });
 * ```
 */
export function createSqliteLedger(options: SqliteLedgerOptions): Ledger {
  const { client, db, where } = openMigratedSqlite(options, { factory: 'createSqliteLedger', what: 'SQLite ledger' });

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
    .prepare();
  const selectRedemption = db
    .select({
      responsesDigest: redemptions.responsesDigest,
      outcome: redemptions.outcome,
      expiresAt: redemptions.expiresAt,
    })
    .from(redemptions)
    .where(eq(redemptions.jti, sql.placeholder('jti')))
    .prepare();
  const updateOutcome = db
    .update(redemptions)
    .set({ outcome: sql`${sql.placeholder('outcome')}` })
    .where(and(eq(redemptions.jti, sql.placeholder('jti')), isNull(redemptions.outcome)))
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
  const pruneRedemptions = db
    .delete(redemptions)
    .where(
      inArray(
        redemptions.jti,
        db
          .select({ jti: redemptions.jti })
          .from(redemptions)
          .where(lt(redemptions.expiresAt, sql.placeholder('now')))
          .limit(sql.placeholder('limit')),
      ),
    )
    .prepare();
  const pruneTokens = db
    .delete(tokens)
    .where(
      inArray(
        tokens.codeHash,
        db
          .select({ codeHash: tokens.codeHash })
          .from(tokens)
          .where(lt(tokens.expiresAt, sql.placeholder('now')))
          .limit(sql.placeholder('limit')),
      ),
    )
    .prepare();

  const writes = new WriteBatcher(client);
  let closed = false;

  const ledger: Ledger = {
    async redeem(request: RedeemRequest): Promise<RedeemResult> {
      assertOpen();
      if (isEnvelopeExpired(request.expiresAt, request.now)) return REPLAYED;
      const params = {
        jti: request.jti,
        digest: request.responsesDigest,
        expiresAt: request.expiresAt,
        now: request.now,
      };
      return writes.submit(() => {
        if (insertRedemption.get(params) !== undefined) return REDEEMED;
        return conflictResult(selectRedemption.get({ jti: request.jti }), request);
      });
    },

    async recordOutcome(jti: string, sealedOutcome: string): Promise<void> {
      assertOpen();
      await writes.submit(() => updateOutcome.run({ jti, outcome: sealedOutcome }));
    },

    async mintToken(request: MintTokenRequest): Promise<string> {
      assertOpen();
      const code = generateTokenCode();
      const params = {
        hash: hashTokenCode(code),
        purpose: request.purpose,
        data: request.data ?? null,
        expiresAt: request.expiresAt,
        now: request.now,
      };
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

    async prune(now: number): Promise<number> {
      assertOpen();
      let removed = 0;
      for (const statement of [pruneRedemptions, pruneTokens]) {
        for (;;) {
          if (closed) return removed;
          const { changes } = statement.run({ now, limit: PRUNE_BATCH });
          removed += changes;
          if (changes < PRUNE_BATCH) break;
          await yieldToEventLoop();
        }
      }
      return removed;
    },

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await schedule.stop();
      writes.flush();
      client.close();
    },
  };

  const schedule = startPruning((now) => ledger.prune(now), options);
  return ledger;

  function assertOpen(): void {
    if (closed) throw new LedgerError(`The SQLite ledger ${where} is closed`);
  }
}
