/**
 * The PostgreSQL `events` facet's statements, batched: concurrent sends of
 * one process (`POST /events/<name>`, `runner.sendEvent`) used to cost one
 * round trip each for recording the event, reading its waiters and settling
 * its count, each autocommit write waiting for its own WAL flush. Here (see
 * `core/batcher.ts`, as `redemptionBatches.ts` does for redemptions) each of
 * the three goes out as ONE statement for every send waiting at that moment:
 *
 *   insert into baton_events (...) select ... from unnest(...) order by event, id
 *     on conflict do nothing returning event, id          -- record
 *   select ... from unnest(...) with ordinality q cross join lateral
 *     (select ... from baton_event_waits ... limit q.lim) left join baton_requests  -- waiters
 *   update baton_events set delivered = s.delivered from unnest(...) s  -- settle
 *
 * No send hears back before the commit holding its write, and a send reads
 * its waiters only after its record committed (the order the lookback relies
 * on: `engine/decisions/lookback.ts`). Exactly once does not change: the
 * primary key lets one recorder of an (event, id) win, in this batch, another
 * batch or another process; an (event, id) twice in one batch is recorded by
 * its first asker, the others are answered as duplicates (read back after the
 * commit, in one more statement: the rare case). Waiters come with their
 * request rows, read in the same statement (`EventWaiter.request`), so
 * routing need not read each instance again before its compare-and-set.
 * Statements joining the batch are planned at each run (unnamed), as in
 * `redemptionBatches.ts`.
 */
import type { EventWaiter, NewEvent, RecordEventResult } from '@baton/engine';
import type pg from 'pg';
import { Batcher } from '../core/batcher.js';
import { toParkedRequest } from '../core/requests.js';

/** A waiters read: what `LedgerEvents.eventWaiters` is asked. */
export interface WaitersQuery {
  readonly event: string;
  readonly match: string;
  readonly limit: number;
  readonly after?: string;
}

interface Settle {
  readonly event: string;
  readonly id: string;
  readonly delivered: number;
}

/** Most statements per batch, and batches of one kind running at once (each holds a connection). */
const LIMITS = { maxBatch: 500, maxInFlight: 2 };

const RECORD = `insert into baton_events
    (event, id, match_key, data, received_at, lookback_until, delivered, expires_at)
  select event, id, match_key, data, received_at, lookback_until, null, expires_at
  from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[])
    as e(event, id, match_key, data, received_at, lookback_until, expires_at)
  order by event, id
  on conflict do nothing
  returning event, id`;

const READ_BACK = `select e.event, e.id, e.delivered, e.received_at from baton_events e
  join unnest($1::text[], $2::text[]) as k(event, id) on e.event = k.event and e.id = k.id`;

const WAITERS = `select q.i, w.id, w.flow, r.id as r_id, r.flow as r_flow, r.requester, r.requester_name,
    r.status, r.waiting_for, r.state, r.version, r.created_at, r.updated_at, r.expires_at, r.due_at
  from unnest($1::text[], $2::text[], $3::text[], $4::int[]) with ordinality as q(event, match, after, lim, i)
  cross join lateral (
    select w.id, w.flow from baton_event_waits w
    where w.event = q.event and w.match_key = q.match and (q.after is null or w.id collate "C" > q.after)
    order by w.id collate "C" limit q.lim
  ) w
  left join baton_requests r on r.id = w.id
  order by q.i, w.id collate "C"`;

const SETTLE = `update baton_events as e set delivered = s.delivered
  from unnest($1::text[], $2::text[], $3::int[]) as s(event, id, delivered)
  where e.event = s.event and e.id = s.id`;

const pair = (event: string, id: string) => `${event}\u0000${id}`;

async function recordBatch(pool: pg.Pool, batch: readonly NewEvent[]): Promise<RecordEventResult[]> {
  const { rows } = await pool.query<{ event: string; id: string }>(RECORD, [
    batch.map((e) => e.event),
    batch.map((e) => e.id),
    batch.map((e) => e.match),
    batch.map((e) => e.data),
    batch.map((e) => e.now),
    batch.map((e) => e.lookbackUntil),
    batch.map((e) => e.expiresAt),
  ]);
  const won = new Set(rows.map((r) => pair(r.event, r.id)));
  const results: (RecordEventResult | undefined)[] = batch.map((e) => {
    const at = pair(e.event, e.id);
    if (!won.has(at)) return undefined;
    won.delete(at); // The first asker of an (event, id) present twice in the batch records it.
    return { status: 'recorded' };
  });
  const losers = batch.filter((_, i) => results[i] === undefined);
  if (losers.length > 0) {
    const back = await pool.query<{ event: string; id: string; delivered: number | null; received_at: string }>(
      READ_BACK,
      [losers.map((e) => e.event), losers.map((e) => e.id)],
    );
    const found = new Map(back.rows.map((r) => [pair(r.event, r.id), r]));
    for (const [i, e] of batch.entries()) {
      if (results[i] !== undefined) continue;
      const row = found.get(pair(e.event, e.id));
      results[i] = {
        status: 'duplicate',
        delivered: row?.delivered === null || row?.delivered === undefined ? null : Number(row.delivered),
        receivedAt: Number(row?.received_at ?? e.now),
      };
    }
  }
  return results as RecordEventResult[];
}

interface WaiterRow {
  i: string;
  id: string;
  flow: string;
  r_id: string | null;
  r_flow: string;
  requester: string;
  requester_name: string | null;
  status: string;
  waiting_for: string;
  state: string;
  version: number;
  created_at: string;
  updated_at: string;
  expires_at: string;
  due_at: string | null;
}

async function waitersBatch(pool: pg.Pool, batch: readonly WaitersQuery[]): Promise<EventWaiter[][]> {
  const { rows } = await pool.query<WaiterRow>(WAITERS, [
    batch.map((q) => q.event),
    batch.map((q) => q.match),
    batch.map((q) => q.after ?? null),
    batch.map((q) => q.limit),
  ]);
  const results: EventWaiter[][] = batch.map(() => []);
  for (const r of rows) {
    const request =
      r.r_id === null
        ? undefined
        : toParkedRequest({
            id: r.r_id,
            flow: r.r_flow,
            requester: r.requester,
            requesterName: r.requester_name,
            status: r.status,
            waitingFor: r.waiting_for,
            state: r.state,
            version: r.version,
            createdAt: Number(r.created_at),
            updatedAt: Number(r.updated_at),
            expiresAt: Number(r.expires_at),
            dueAt: r.due_at === null ? null : Number(r.due_at),
          });
    results[Number(r.i) - 1]!.push({ id: r.id, flow: r.flow, ...(request ? { request } : {}) });
  }
  return results;
}

async function settleBatch(pool: pg.Pool, batch: readonly Settle[]): Promise<undefined[]> {
  await pool.query(SETTLE, [batch.map((s) => s.event), batch.map((s) => s.id), batch.map((s) => s.delivered)]);
  return batch.map(() => undefined);
}

/** The batched statements of the `events` facet (see the module comment). */
export interface EventBatches {
  record(event: NewEvent): Promise<RecordEventResult>;
  waiters(query: WaitersQuery): Promise<EventWaiter[]>;
  settle(settle: Settle): Promise<void>;
  /** Wait for every batch in flight; call before the pool ends. */
  drain(): Promise<void>;
}

/** Record, read waiters and settle through batches on `pool`. */
export function createEventBatches(pool: pg.Pool): EventBatches {
  const record = new Batcher<NewEvent, RecordEventResult>({ ...LIMITS, run: (b) => recordBatch(pool, b) });
  const waiters = new Batcher<WaitersQuery, EventWaiter[]>({ ...LIMITS, run: (b) => waitersBatch(pool, b) });
  const settle = new Batcher<Settle, undefined>({ ...LIMITS, run: (b) => settleBatch(pool, b) });
  return {
    record: (event) => record.submit(event),
    waiters: (query) => waiters.submit(query),
    settle: (s) => settle.submit(s),
    drain: async () => {
      await Promise.all([record.drain(), waiters.drain(), settle.drain()]);
    },
  };
}
