/**
 * Compare-and-set rewrites of parked requests on PostgreSQL, batched. A
 * rewrite that carries no notifications and no event waits (an instance an
 * event, a decision or a timer moved on, or ended) used to be one autocommit
 * statement each, waiting for its own WAL flush: under 32 concurrent event
 * senders that was the one statement per event left unbatched. Here (see
 * `core/batcher.ts`, as `redemptionBatches.ts` and `eventBatches.ts` do) the
 * rewrites of one process waiting at one moment go out as ONE statement:
 *
 *   with input as (select * from unnest(...) as i(id, expected, ...)),
 *   locked as (select r.id from baton_requests r join input i
 *     on r.id = i.id and r.version = i.expected order by r.id collate "C" for update of r),
 *   written as (update baton_requests r set ..., version = r.version + 1 from input i
 *     where r.id = i.id and r.version = i.expected and r.id in (select id from locked)
 *     returning r.id, r.version),
 *   cleared as (delete from baton_event_waits w using written where w.id = written.id)
 *   select id, version from written
 *
 * Each row is still its own compare-and-set: it is written only if it still
 * has the version its writer read, and a writer whose row moved on (here or
 * in another process, which the row lock makes it wait for and then re-check
 * against) hears `conflict`. Rows are locked in id order, so two batches
 * sharing rows wait on each other in one order and never deadlock. The waits
 * an earlier version had are removed only for rows the statement wrote (the
 * delete sees the statement's snapshot, so waits a later writer commits are
 * never removed), as the unbatched `rewriteRequest` of `requests.ts` does.
 * One statement is one transaction: no writer hears back before its commit.
 * A batch holding one id twice sends the first write and then, in a second
 * statement after that commit, the rest (so each compares against what the
 * first wrote). The statement joins the batch and is planned at each run
 * (unnamed), as in `redemptionBatches.ts`.
 */
import type pg from 'pg';
import { Batcher } from '../core/batcher.js';
import type { ParkParams } from '../core/params.js';

/** One rewrite: the row to write and the version its writer read. */
export interface Rewrite {
  readonly params: ParkParams;
  readonly expected: number;
}

/** Most rewrites per statement, and statements running at once (each holds a connection). */
const LIMITS = { maxBatch: 500, maxInFlight: 2 };

const REWRITE = `with input as (
    select * from unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
      $8::text[], $9::bigint[], $10::bigint[], $11::bigint[])
      as i(id, expected, flow, requester, requester_name, status, waiting_for, state, now, expires_at, due_at)
  ), locked as (
    select r.id from baton_requests r join input i on r.id = i.id and r.version = i.expected
    order by r.id collate "C"
    for update of r
  ), written as (
    update baton_requests as r set flow = i.flow, requester = i.requester, requester_name = i.requester_name,
      status = i.status, waiting_for = i.waiting_for, state = i.state, version = r.version + 1,
      updated_at = i.now, expires_at = i.expires_at,
      -- Every write recomputes the next timer and ends a scheduler's claim.
      due_at = i.due_at, lease_owner = null, lease_until = null
    from input i
    where r.id = i.id and r.version = i.expected and r.id in (select id from locked)
    returning r.id, r.version
  ), cleared as (
    delete from baton_event_waits w using written where w.id = written.id
  )
  select id, version from written`;

/** Rewrite a batch whose ids are distinct: the new version of each row written, or undefined. */
async function rewriteDistinct(pool: pg.Pool, batch: readonly Rewrite[]): Promise<(number | undefined)[]> {
  const column = <T>(of: (p: ParkParams) => T) => batch.map((r) => of(r.params));
  const { rows } = await pool.query<{ id: string; version: number }>(REWRITE, [
    column((p) => p.id),
    batch.map((r) => r.expected),
    column((p) => p.flow),
    column((p) => p.requester),
    column((p) => p.requesterName),
    column((p) => p.status),
    column((p) => p.waitingFor),
    column((p) => p.state),
    column((p) => p.now),
    column((p) => p.expiresAt),
    column((p) => p.dueAt),
  ]);
  const written = new Map(rows.map((row) => [row.id, Number(row.version)]));
  return batch.map((r) => written.get(r.params.id));
}

/** Rewrite `batch`: ids seen earlier in it go in a later statement, after the first's commit. */
async function rewriteBatch(pool: pg.Pool, batch: readonly Rewrite[]): Promise<(number | undefined)[]> {
  const seen = new Set<string>();
  const first: number[] = [];
  const rest: number[] = [];
  for (const [i, r] of batch.entries()) {
    if (seen.has(r.params.id)) rest.push(i);
    else {
      seen.add(r.params.id);
      first.push(i);
    }
  }
  const results: (number | undefined)[] = new Array(batch.length);
  const written = await rewriteDistinct(
    pool,
    first.map((i) => batch[i]!),
  );
  for (const [k, i] of first.entries()) results[i] = written[k];
  if (rest.length > 0) {
    const later = await rewriteBatch(
      pool,
      rest.map((i) => batch[i]!),
    );
    for (const [k, i] of rest.entries()) results[i] = later[k];
  }
  return results;
}

/** The batched rewrites of the `requests` facet (see the module comment). */
export interface RewriteBatches {
  /** Compare-and-set `params` over `expected`: the new version, or undefined when the row moved on. */
  rewrite(params: ParkParams, expected: number): Promise<number | undefined>;
  /** Wait for every batch in flight; call before the pool ends. */
  drain(): Promise<void>;
}

/** Rewrite parked requests through batches on `pool`. */
export function createRewriteBatches(pool: pg.Pool): RewriteBatches {
  const batcher = new Batcher<Rewrite, number | undefined>({ ...LIMITS, run: (b) => rewriteBatch(pool, b) });
  return {
    rewrite: (params, expected) => batcher.submit({ params, expected }),
    drain: () => batcher.drain(),
  };
}
