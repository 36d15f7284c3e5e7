/**
 * Redemptions and their outcomes on PostgreSQL, batched. Every redemption
 * used to be its own autocommit `INSERT` waiting for its own WAL flush, so
 * throughput was one flush per redemption. Here concurrent redemptions of
 * one process go out together (see `core/batcher.ts`) as ONE statement:
 *
 *   insert into baton_redemptions (...) select * from unnest($1::text[], ...)
 *   order by jti on conflict do nothing returning jti
 *
 * One statement is one transaction: the batch commits, or fails, as a whole,
 * and every waiter hears back only after that commit. Exactly-once does not
 * change: the primary key still lets exactly one inserter of a jti win, in
 * this batch, another batch or another process. A jti present twice in one
 * batch goes in once; the first asker wins and the others are answered as
 * losers (from the row, after the commit). Rows are inserted in jti order so
 * that two batches holding the same jtis wait on each other in one order and
 * never deadlock. Losers (the rare case) are read back in one more statement.
 * Outcomes are recorded the same way: one `UPDATE ... FROM unnest(...)` per
 * batch, only where none was recorded yet.
 */
import type { RedeemRequest, RedeemResult } from '@baton/engine';
import type pg from 'pg';
import { Batcher } from '../core/batcher.js';
import { conflictResult, REDEEMED, type RedemptionRow } from '../core/results.js';

/** Batching limits for redemptions and outcomes. */
export interface RedemptionBatching {
  /** Most redemptions (or outcomes) per statement. */
  readonly maxBatch: number;
  /** Most statements of each kind running at once, per ledger. */
  readonly maxInFlight: number;
}

/** Default limits: measured on 2 cores, 4 processes × 64 in flight (bench-ledger). */
export const DEFAULT_REDEMPTION_BATCHING: RedemptionBatching = { maxBatch: 500, maxInFlight: 2 };

const INSERT = {
  name: 'baton_redeem_batch',
  text: `insert into baton_redemptions (jti, responses_digest, outcome, expires_at, redeemed_at)
    select jti, digest, null, expires_at, now
    from unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[]) as r(jti, digest, expires_at, now)
    order by jti
    on conflict do nothing
    returning jti`,
};

// The two statements below join the table with the batch's jtis. They are planned at each run
// (unnamed): a named statement's plan is made once per connection and kept, and the plan made
// while the table was small (a fresh deployment) scans the whole table, which it then kept
// doing as the table grew (measured: 15.7 million rows read for 10,800 outcomes in a
// 1-minute bench). Planned with the batch in hand, they look each jti up in the primary key.
const SELECT = {
  text: `select jti, responses_digest, outcome, expires_at, redeemed_at from baton_redemptions where jti = any($1::text[])`,
};

const RECORD = {
  text: `update baton_redemptions as r set outcome = o.outcome
    from unnest($1::text[], $2::text[]) as o(jti, outcome)
    where r.jti = o.jti and r.outcome is null`,
};

interface Outcome {
  readonly jti: string;
  readonly outcome: string;
}

/** Redeem and record through batches on `pool`. */
export function createRedemptionBatches(
  pool: pg.Pool,
  batching: RedemptionBatching,
  onBatch?: { readonly redeem: (size: number) => void; readonly outcome: (size: number) => void },
): {
  redeem: (request: RedeemRequest) => Promise<RedeemResult>;
  recordOutcome: (jti: string, sealedOutcome: string) => Promise<void>;
  drain: () => Promise<void>;
} {
  const redemptions = new Batcher<RedeemRequest, RedeemResult>({
    ...batching,
    run: (batch) => redeemBatch(pool, batch),
    ...(onBatch ? { onBatch: onBatch.redeem } : {}),
  });
  const outcomes = new Batcher<Outcome, undefined>({
    ...batching,
    run: (batch) => recordBatch(pool, batch),
    ...(onBatch ? { onBatch: onBatch.outcome } : {}),
  });
  return {
    redeem: (request) => redemptions.submit(request),
    recordOutcome: (jti, outcome) => outcomes.submit({ jti, outcome }),
    drain: async () => {
      await Promise.all([redemptions.drain(), outcomes.drain()]);
    },
  };
}

/** One statement for the whole batch; the winners are the jtis it returns (first asker of each). */
async function redeemBatch(pool: pg.Pool, batch: readonly RedeemRequest[]): Promise<RedeemResult[]> {
  const first = new Map<string, RedeemRequest>();
  for (const request of batch) if (!first.has(request.jti)) first.set(request.jti, request);
  const rows = [...first.values()];
  const inserted = await pool.query<{ jti: string }>({
    ...INSERT,
    values: [
      rows.map((r) => r.jti),
      rows.map((r) => r.responsesDigest),
      rows.map((r) => r.expiresAt),
      rows.map((r) => r.now),
    ],
  });
  const won = new Set(inserted.rows.map((row) => row.jti));
  const winners = new Set<RedeemRequest>();
  for (const jti of won) winners.add(first.get(jti)!);
  if (winners.size === batch.length) return batch.map(() => REDEEMED);

  const losing = [...new Set(batch.filter((r) => !winners.has(r)).map((r) => r.jti))];
  const found = await pool.query<{
    jti: string;
    responses_digest: string;
    outcome: string | null;
    expires_at: string;
    redeemed_at: string;
  }>({ ...SELECT, values: [losing] });
  const byJti = new Map<string, RedemptionRow>(
    found.rows.map((row) => [
      row.jti,
      {
        responsesDigest: row.responses_digest,
        outcome: row.outcome,
        expiresAt: Number(row.expires_at),
        redeemedAt: Number(row.redeemed_at),
      },
    ]),
  );
  return batch.map((request) => (winners.has(request) ? REDEEMED : conflictResult(byJti.get(request.jti), request)));
}

/** One statement for the whole batch; a jti recorded twice keeps its first outcome. */
async function recordBatch(pool: pg.Pool, batch: readonly Outcome[]): Promise<undefined[]> {
  const first = new Map<string, string>();
  for (const { jti, outcome } of batch) if (!first.has(jti)) first.set(jti, outcome);
  await pool.query({ ...RECORD, values: [[...first.keys()], [...first.values()]] });
  return batch.map(() => undefined);
}
