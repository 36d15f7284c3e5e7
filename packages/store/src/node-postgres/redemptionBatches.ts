/**
 * Redemptions and their outcomes on PostgreSQL, batched together. Every
 * redemption used to be its own autocommit `INSERT` waiting for its own WAL
 * flush, so throughput was one flush per redemption. Here concurrent
 * redemptions AND outcomes of one process go out together (see
 * `core/batcher.ts`) as ONE statement, so a flow's two writes (its state
 * redeemed before the round, its outcome recorded after) ride along with
 * other flows' writes instead of costing a statement and a commit each. A
 * round without side effects writes once: its redemption carries its outcome
 * (`redeemWithOutcome`), a row of the same insert with its outcome column set
 * (null for a plain redemption):
 *
 *   with recorded as (update baton_redemptions as r set outcome = o.outcome
 *     from unnest($6::text[], $7::text[]) as o(jti, outcome)
 *     where r.jti = o.jti and r.outcome is null)
 *   insert into baton_redemptions (...) select * from unnest($1::text[], ...,
 *     $5::text[] (outcomes)) order by jti on conflict do nothing returning jti
 *
 * (a batch of only one kind sends only its half). One statement is one
 * transaction: the batch commits, or fails, as a whole, and every waiter
 * hears back only after that commit. Exactly-once does not change: the
 * primary key still lets exactly one inserter of a jti win, in this batch,
 * another batch or another process, with or without an outcome (a losing
 * combined write writes nothing); an outcome is still written only where
 * none was, and only for a jti whose redemption has committed (its round ran
 * after that commit), so the update never touches a row the insert adds. A
 * jti present twice in one batch goes in once; the first asker wins and the
 * others are answered as losers (from the row, after the commit). Rows are
 * inserted in jti order so that two batches holding the same jtis wait on
 * each other in one order and never deadlock; the update's rows are the
 * sending process's own committed redemptions, which no other statement
 * updates, so it waits on no one. Losers (the rare case) are read back in
 * one more statement.
 */
import type { RedeemRequest, RedeemResult } from '@baton/engine';
import type pg from 'pg';
import { Batcher } from '../core/batcher.js';
import { conflictResult, REDEEMED, type RedemptionRow } from '../core/results.js';

/** Batching limits for redemptions and outcomes. */
export interface RedemptionBatching {
  /** Most writes (redemptions, outcomes and both at once together) per statement. */
  readonly maxBatch: number;
  /** Most statements running at once, per ledger. */
  readonly maxInFlight: number;
  /**
   * While busy (the last statement carried more than one write), wait this long before sending
   * the next, ms, so more writes share its commit; a ledger whose last statement carried one
   * write sends at once. Default 0 (never wait).
   */
  readonly lingerMs?: number;
}

/**
 * Default limits: one statement in flight per ledger, so that writes arriving while it commits
 * leave together with the next (an idle ledger still sends a lone write at once), and, once the
 * ledger is busy, 3 ms of lingering before the next statement so more writes share its commit
 * (a ledger whose last statement carried a lone write never waits). Measured on 2 cores, 2
 * instances × 32 clients (`bench-concurrency --mode user`): 0.58 statements per flow with one in
 * flight against 0.79 with two; with a round redeemed with its outcome (one write per flow),
 * 0.25–0.29 without the linger and 0.13–0.22 with it (1 ms: 0.28; 5 ms: 0.20, and slower).
 */
export const DEFAULT_REDEMPTION_BATCHING: RedemptionBatching = { maxBatch: 500, maxInFlight: 1, lingerMs: 3 };

const INSERT_COLUMNS = `insert into baton_redemptions (jti, responses_digest, outcome, expires_at, redeemed_at)
    select jti, digest, outcome, expires_at, now
    from unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[]) as r(jti, digest, expires_at, now, outcome)
    order by jti
    on conflict do nothing
    returning jti`;

/**
 * Redemptions only (plain, or with their outcomes: `$5`, null for a plain one): named (prepared
 * once per connection), since it joins nothing.
 */
const INSERT = { name: 'baton_redeem_batch', text: INSERT_COLUMNS };

// The statements below join the table with the batch's jtis. They are planned at each run
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

/**
 * Outcomes and redemptions in one statement. The update is a data-modifying CTE the insert does
 * not read: PostgreSQL runs it to completion after the insert, on the same snapshot.
 */
const RECORD_AND_INSERT = {
  text: `with recorded as (
      update baton_redemptions as r set outcome = o.outcome
      from unnest($6::text[], $7::text[]) as o(jti, outcome)
      where r.jti = o.jti and r.outcome is null
    )
    ${INSERT_COLUMNS}`,
};

/** The statements above, for `scripts/bench-pg-drivers.ts` (the same text on another driver). */
export const REDEMPTION_STATEMENTS = { INSERT, SELECT, RECORD, RECORD_AND_INSERT } as const;

/** A row to insert: a redemption, with its outcome when it is recorded at once (else null). */
interface Insert {
  readonly kind: 'redeem';
  readonly request: RedeemRequest;
  readonly outcome: string | null;
}

/** One write of a batch: a redemption (with its outcome or without), or an outcome to record. */
type Write = Insert | { readonly kind: 'outcome'; readonly jti: string; readonly outcome: string };

/** Batch sizes, for `stats()`: a redemption with its outcome counts as a redemption. */
type OnBatch = { readonly redeem: (size: number) => void; readonly outcome: (size: number) => void };

/** Redeem and record through batches on `pool`. */
export function createRedemptionBatches(
  pool: pg.Pool,
  batching: RedemptionBatching,
  onBatch?: OnBatch,
): {
  /** Redeem `request`, recording `sealedOutcome` with it (`redeemWithOutcome`), or none yet (`null`). */
  redeem: (request: RedeemRequest, sealedOutcome: string | null) => Promise<RedeemResult>;
  recordOutcome: (jti: string, sealedOutcome: string) => Promise<void>;
  drain: () => Promise<void>;
} {
  const writes = new Batcher<Write, RedeemResult | undefined>({
    ...batching,
    run: (batch) => writeBatch(pool, batch, onBatch),
  });
  return {
    redeem: (request, outcome) => writes.submit({ kind: 'redeem', request, outcome }) as Promise<RedeemResult>,
    recordOutcome: async (jti, outcome) => {
      await writes.submit({ kind: 'outcome', jti, outcome });
    },
    drain: () => writes.drain(),
  };
}

/** One statement for the whole batch: its outcomes recorded, its redemptions (with or without outcome) inserted. */
async function writeBatch(
  pool: pg.Pool,
  batch: readonly Write[],
  onBatch?: OnBatch,
): Promise<(RedeemResult | undefined)[]> {
  const inserts: Insert[] = [];
  // A jti recorded twice keeps its first outcome.
  const outcomes = new Map<string, string>();
  let outcomeCount = 0;
  for (const write of batch) {
    if (write.kind === 'redeem') inserts.push(write);
    else {
      outcomeCount++;
      if (!outcomes.has(write.jti)) outcomes.set(write.jti, write.outcome);
    }
  }
  if (inserts.length > 0) onBatch?.redeem(inserts.length);
  if (outcomeCount > 0) onBatch?.outcome(outcomeCount);

  const results = inserts.length > 0 ? await redeemBatch(pool, inserts, outcomes) : [];
  if (inserts.length === 0) {
    await pool.query({ ...RECORD, values: [[...outcomes.keys()], [...outcomes.values()]] });
  }
  let next = 0;
  return batch.map((write) => (write.kind === 'outcome' ? undefined : results[next++]));
}

/**
 * One statement for the redemptions (and `outcomes`, when there are any); the winners are the
 * jtis it returns (first asker of each, with its outcome if it brought one).
 */
async function redeemBatch(
  pool: pg.Pool,
  batch: readonly Insert[],
  outcomes: ReadonlyMap<string, string>,
): Promise<RedeemResult[]> {
  const first = new Map<string, Insert>();
  for (const insert of batch) if (!first.has(insert.request.jti)) first.set(insert.request.jti, insert);
  const rows = [...first.values()];
  const values: unknown[] = [
    rows.map((r) => r.request.jti),
    rows.map((r) => r.request.responsesDigest),
    rows.map((r) => r.request.expiresAt),
    rows.map((r) => r.request.now),
    rows.map((r) => r.outcome),
  ];
  const inserted = await pool.query<{ jti: string }>(
    outcomes.size === 0
      ? { ...INSERT, values }
      : { ...RECORD_AND_INSERT, values: [...values, [...outcomes.keys()], [...outcomes.values()]] },
  );
  const won = new Set(inserted.rows.map((row) => row.jti));
  const winners = new Set<Insert>();
  for (const jti of won) winners.add(first.get(jti)!);
  if (winners.size === batch.length) return batch.map(() => REDEEMED);

  const losing = [...new Set(batch.filter((r) => !winners.has(r)).map((r) => r.request.jti))];
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
  return batch.map((insert) =>
    winners.has(insert) ? REDEEMED : conflictResult(byJti.get(insert.request.jti), insert.request),
  );
}
