/**
 * The PostgreSQL ledger on node-postgres, for deployments where many Baton
 * instances share one database behind a load balancer. Same tables and
 * semantics as the SQLite ledger: a redemption is one atomic
 * `INSERT ... ON CONFLICT DO NOTHING RETURNING` (PostgreSQL's unique index
 * makes exactly one concurrent inserter win, on any instance), a token is
 * used by one `UPDATE ... WHERE used_at IS NULL AND expires_at > now
 * RETURNING`. A parked request is rewritten by a compare-and-set `UPDATE ...
 * WHERE version = expected`, and a decision recorded in one transaction that
 * locks its request's row, checks the decision is pending and in time and the
 * request still waits at the version the decider read, then records it and
 * bumps that version: row locks make exactly one concurrent writer win. Opening connects and migrates at
 * once, so an unreachable or misconfigured database fails at start-up with a
 * clear error rather than on the first request. Statements are prepared (named) through drizzle
 * (the decision's transaction excepted).
 * Redemptions and their outcomes are batched by default (`redemptions.ts`): concurrent
 * ones share one statement and one commit. A connection failure during any call (the
 * server restarting, say) rejects with the engine's retryable `LedgerUnavailableError`
 * (`unavailable.ts`); the pool reconnects by itself on the next call. Recording an
 * outcome is retried through such failures for up to 15 s: its round has already run.
 */
import type {
  ClaimStep,
  ClaimStepResult,
  DeciderRewrite,
  DecisionFilter,
  DecisionRecord,
  DelegationFilter,
  DelegationRecord,
  HandDecision,
  HandDecisionResult,
  Ledger,
  LegacyDecider,
  MintTokenRequest,
  NewDecision,
  NewDelegation,
  ParkedRequest,
  ParkRequest,
  ParkResult,
  RecordDecision,
  RecordDecisionResult,
  RecordStep,
  RecordStepResult,
  RecordVote,
  RecordVoteResult,
  RedeemRequest,
  RedeemResult,
  RedeemTokenResult,
  RemoveDelegation,
  RunFilter,
  StepRecord,
  VoteRecord,
} from '@baton/engine';
import { and, asc, desc, eq, gt, gte, inArray, isNotNull, isNull, lt, lte, or, sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';
import { decisionFilterWhere } from '../core/decisionFilter.js';
import { delegationFilterWhere, delegationRow, handoverText, toDelegationRecord } from '../core/delegations.js';
import { LedgerError } from '../core/errors.js';
import { claimParams, mintTokenParams, newDecisionRow, parkParams } from '../core/params.js';
import { type PruningOptions, startPruning } from '../core/pruning.js';
import {
  LEGACY_DECIDERS_DONE_KEY,
  REWRITE_DECIDERS_BATCH,
  toDecisionRecord,
  toLegacyDecider,
  toParkedRequest,
  toVoteRecord,
  voteRow,
} from '../core/requests.js';
import {
  conflictResult,
  decisionFailure,
  decisionRecorded,
  isEnvelopeExpired,
  REDEEMED,
  REPLAYED,
  tokenFailure,
  tokenRedeemed,
  voteFailure,
} from '../core/results.js';
import { runFilterWhere } from '../core/runFilter.js';
import { BatchCounter, withStats } from '../core/stats.js';
import { claimFailure, toStepRecord } from '../core/steps.js';
import { generateTokenCode, hashTokenCode, MAX_TOKEN_CODE_LENGTH } from '../core/tokens.js';
import { decisions, decisionVotes, delegations, meta, redemptions, requests, steps, tokens } from '../schema/pg.js';
import { connectPostgres, type PostgresConnectionOptions } from './connect.js';
import { createPostgresEvents } from './events.js';
import { createRedemptionBatches, DEFAULT_REDEMPTION_BATCHING, type RedemptionBatching } from './redemptions.js';
import { createPostgresScheduling } from './scheduling.js';
import { OUTCOME_RETRY_BUDGET_MS, retryWhileUnavailable, toUnavailable } from './unavailable.js';

export { createPostgresAuditLog, type PostgresAuditLogOptions } from './audit.js';
export type { RedemptionBatching } from './redemptions.js';

/**
 * Options for the ledger: give `connectionString` or `pool`, not both
 * (a pool created from the URL has 10 connections unless `maxConnections` says otherwise).
 */
export interface PostgresLedgerOptions extends PruningOptions, PostgresConnectionOptions {
  /**
   * How concurrent redemptions and outcomes are batched into one statement each; `false`
   * sends one statement per call (the way before batching, kept for comparison).
   * Default `{ maxBatch: 500, maxInFlight: 2 }`.
   */
  readonly batching?: RedemptionBatching | false;
}

/** Rows deleted per statement by `prune`. */
const PRUNE_BATCH = 5000;

/** Expired requests pruned per statement (each takes its decisions with it). */
const PRUNE_REQUESTS_BATCH = 1000;

/** Decisions inserted per statement (13 bound values each, far below PostgreSQL's 65 535). */
const INSERT_DECISIONS_BATCH = 1000;

/** Text ordered by code point (as SQLite and the memory ledger order it), whatever the database's collation. */
const byCodePoint = (column: AnyPgColumn) => sql`${column} collate "C"`;

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
  type Tx = Parameters<Parameters<typeof db.transaction>[0]>[0];

  /**
   * The first reads of every write of a decision (record, vote, hand-over): the request's row
   * lock, so every writer of the request (parkRequest's compare-and-set, other deciders) queues
   * behind it, then the decision's state as they committed it.
   */
  async function lockDecision(tx: Tx, id: string, key: string) {
    const [request] = await tx
      .select({ status: requests.status, version: requests.version })
      .from(requests)
      .where(eq(requests.id, id))
      .for('update');
    const [row] = await tx
      .select({ status: decisions.status, deadline: decisions.deadline })
      .from(decisions)
      .where(and(eq(decisions.id, id), eq(decisions.key, key)));
    return { request, row };
  }

  /** The last write of a decision's transaction: the request's version bumped; returns the new one. */
  async function bumpVersion(tx: Tx, id: string, now: number): Promise<number> {
    const [bumped] = await tx
      .update(requests)
      .set({ version: sql`${requests.version} + 1`, updatedAt: now })
      .where(eq(requests.id, id))
      .returning({ version: requests.version });
    return bumped!.version;
  }

  /** Record a pending decision as decided (a hand-over's assignee cleared); false when it was not pending. */
  async function decidePending(
    tx: Tx,
    id: string,
    key: string,
    decided: Pick<
      RecordDecision,
      'decider' | 'deciderName' | 'deciderDisplay' | 'content' | 'via' | 'onBehalfOf' | 'onBehalfOfName'
    >,
    now: number,
  ): Promise<boolean> {
    const recorded = await tx
      .update(decisions)
      .set({
        status: 'decided',
        decider: decided.decider,
        deciderName: decided.deciderName ?? null,
        content: decided.content,
        decidedAt: now,
        deciderDisplay: decided.deciderDisplay ?? null,
        via: decided.via ?? null,
        assignee: null,
        onBehalfOf: decided.onBehalfOf ?? null,
        onBehalfOfName: decided.onBehalfOfName ?? null,
      })
      .where(and(eq(decisions.id, id), eq(decisions.key, key), eq(decisions.status, 'pending')))
      .returning({ key: decisions.key });
    return recorded.length > 0;
  }
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
  const scheduling = createPostgresScheduling(db, assertOpen);
  const eventStatements = createPostgresEvents(db, assertOpen);

  const insertRequest = db
    .insert(requests)
    .values({
      id: sql.placeholder('id'),
      flow: sql.placeholder('flow'),
      requester: sql.placeholder('requester'),
      requesterName: sql.placeholder('requesterName'),
      status: sql.placeholder('status'),
      waitingFor: sql.placeholder('waitingFor'),
      state: sql.placeholder('state'),
      version: 1,
      createdAt: sql.placeholder('now'),
      updatedAt: sql.placeholder('now'),
      expiresAt: sql.placeholder('expiresAt'),
      dueAt: sql.placeholder('dueAt'),
    })
    .onConflictDoNothing()
    .returning({ version: requests.version })
    .prepare('baton_park_insert');
  // Compare-and-set: the row is rewritten only if it still has the version the writer read.
  // Concurrent writers with one version queue on the row lock; the first commits, and the
  // others' WHERE no longer matches once re-checked against the new row.
  /**
   * A rewrite without event waits, one round trip: the compare-and-set update and, only when it
   * wrote, the removal of the waits an earlier version had (a data-modifying CTE: the delete sees
   * the statement's snapshot, so the waits a later writer commits are never removed).
   */
  const rewriteRequest = async (params: ReturnType<typeof parkParams>, expected: number) => {
    const { rows } = await db.execute<{ version: number }>(sql`
      with written as (
        update baton_requests set flow = ${params.flow}, requester = ${params.requester},
          requester_name = ${params.requesterName}, status = ${params.status},
          waiting_for = ${params.waitingFor}, state = ${params.state}, version = version + 1,
          updated_at = ${params.now}, expires_at = ${params.expiresAt},
          -- Every write recomputes the next timer and ends a scheduler's claim.
          due_at = ${params.dueAt}, lease_owner = null, lease_until = null
        where id = ${params.id} and version = ${expected}
        returning version
      ), cleared as (
        delete from baton_event_waits where id = ${params.id} and exists (select 1 from written)
      )
      select version from written`);
    return rows.map((row) => ({ version: Number(row.version) }));
  };
  const selectRequest = db
    .select()
    .from(requests)
    .where(eq(requests.id, sql.placeholder('id')))
    .prepare('baton_request_select');
  const selectRequestsOf = db
    .select()
    .from(requests)
    .where(and(eq(requests.requester, sql.placeholder('requester')), gte(requests.updatedAt, sql.placeholder('since'))))
    .orderBy(desc(requests.updatedAt), asc(byCodePoint(requests.id)))
    .prepare('baton_requests_of');
  // Decisions decided before schema 6: the migration left the readable decider in decider_name.
  const selectLegacyDeciders = db
    .select({ id: decisions.id, key: decisions.key, deciderName: decisions.deciderName, content: decisions.content })
    .from(decisions)
    .where(and(isNull(decisions.decider), isNotNull(decisions.deciderName)))
    .limit(sql.placeholder('limit'))
    .prepare('baton_legacy_deciders');
  const selectLegacyDone = db
    .select({ value: meta.value })
    .from(meta)
    .where(eq(meta.key, LEGACY_DECIDERS_DONE_KEY))
    .prepare('baton_legacy_deciders_done');
  const markLegacyDone = db
    .insert(meta)
    .values({ key: LEGACY_DECIDERS_DONE_KEY, value: '1' })
    .onConflictDoNothing()
    .prepare('baton_mark_legacy_deciders_done');
  // Only while still legacy: two instances starting at once rewrite a row once.
  const rewriteDecider = db
    .update(decisions)
    .set({
      decider: sql`${sql.placeholder('decider')}`,
      deciderName: sql`${sql.placeholder('deciderName')}`,
      content: sql`${sql.placeholder('content')}`,
    })
    .where(
      and(
        eq(decisions.id, sql.placeholder('id')),
        eq(decisions.key, sql.placeholder('key')),
        isNull(decisions.decider),
        eq(decisions.deciderName, sql.placeholder('principal')),
      ),
    )
    .prepare('baton_rewrite_decider');
  const closePending = db
    .update(decisions)
    .set({ status: 'closed' })
    .where(and(eq(decisions.id, sql.placeholder('id')), eq(decisions.status, 'pending')))
    .prepare('baton_close_decisions');
  const insertStep = db
    .insert(steps)
    .values({
      id: sql.placeholder('id'),
      key: sql.placeholder('key'),
      status: 'running',
      owner: sql.placeholder('owner'),
      leaseUntil: sql.placeholder('leaseUntil'),
      claims: 1,
      outcome: null,
      recordedAt: null,
      expiresAt: sql.placeholder('expiresAt'),
    })
    .onConflictDoNothing()
    .returning({ claims: steps.claims })
    .prepare('baton_step_insert');
  // Ours, or its lease ended. Under READ COMMITTED a concurrent claimer waits on the row lock and
  // re-checks the condition against the winner's lease: exactly one matches.
  const takeStep = db
    .update(steps)
    .set({
      claims: sql`${steps.claims} + (case when ${steps.owner} = ${sql.placeholder('owner')} then 0 else 1 end)`,
      owner: sql`${sql.placeholder('owner')}`,
      leaseUntil: sql`${sql.placeholder('leaseUntil')}`,
    })
    .where(
      and(
        eq(steps.id, sql.placeholder('id')),
        eq(steps.key, sql.placeholder('key')),
        eq(steps.status, 'running'),
        or(eq(steps.owner, sql.placeholder('owner')), lte(steps.leaseUntil, sql.placeholder('now'))),
      ),
    )
    .returning({ claims: steps.claims })
    .prepare('baton_step_take');
  const finishStep = db
    .update(steps)
    .set({
      status: sql`${sql.placeholder('status')}`,
      outcome: sql`${sql.placeholder('outcome')}`,
      recordedAt: sql`${sql.placeholder('now')}`,
    })
    .where(and(eq(steps.id, sql.placeholder('id')), eq(steps.key, sql.placeholder('key')), eq(steps.status, 'running')))
    .returning({ key: steps.key })
    .prepare('baton_step_finish');
  // An operator's retry: a failed step back to running, unowned, its lease ended (the next claim takes it).
  const reopenStep = db
    .update(steps)
    .set({ status: 'running', owner: '', leaseUntil: 0, outcome: null, recordedAt: null })
    .where(and(eq(steps.id, sql.placeholder('id')), eq(steps.key, sql.placeholder('key')), eq(steps.status, 'failed')))
    .returning({ key: steps.key })
    .prepare('baton_step_reopen');
  const selectStep = db
    .select()
    .from(steps)
    .where(and(eq(steps.id, sql.placeholder('id')), eq(steps.key, sql.placeholder('key'))))
    .prepare('baton_step_select');

  const batchCounts = { redeem: new BatchCounter(), outcome: new BatchCounter() };
  const batches =
    options.batching === false
      ? undefined
      : createRedemptionBatches(pool, options.batching ?? DEFAULT_REDEMPTION_BATCHING, {
          redeem: batchCounts.redeem.record,
          outcome: batchCounts.outcome.record,
        });

  const ledger: Ledger = {
    async redeem(request: RedeemRequest): Promise<RedeemResult> {
      assertOpen();
      if (isEnvelopeExpired(request.expiresAt, request.now)) return REPLAYED;
      if (batches) return batches.redeem(request);
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

    async parkRequest(request: ParkRequest, expectedVersion: number | null): Promise<ParkResult> {
      assertOpen();
      const params = parkParams(request);
      const messages = request.outbox ?? [];
      const waits = request.status === 'waiting' ? (request.events ?? []) : [];
      if (messages.length > 0 || waits.length > 0) {
        // The write, the notifications its round raised and its event waits: together or not at all.
        const written = await db.transaction(async (tx) => {
          const [row] =
            expectedVersion === null
              ? await tx
                  .insert(requests)
                  .values({
                    ...params,
                    version: 1,
                    createdAt: params.now,
                    updatedAt: params.now,
                  })
                  .onConflictDoNothing()
                  .returning({ version: requests.version })
              : await tx
                  .update(requests)
                  .set({
                    flow: params.flow,
                    requester: params.requester,
                    requesterName: params.requesterName,
                    status: params.status,
                    waitingFor: params.waitingFor,
                    state: params.state,
                    version: sql`${requests.version} + 1`,
                    updatedAt: params.now,
                    expiresAt: params.expiresAt,
                    dueAt: params.dueAt,
                    leaseOwner: null,
                    leaseUntil: null,
                  })
                  .where(and(eq(requests.id, params.id), eq(requests.version, expectedVersion)))
                  .returning({ version: requests.version });
          if (row !== undefined) {
            await scheduling.insertOutbox(tx, messages, params.now);
            if (expectedVersion !== null || waits.length > 0)
              await eventStatements.replaceWaits(tx, params.id, params.flow, waits);
          }
          return row;
        });
        return written === undefined ? { status: 'conflict' } : { status: 'parked', version: written.version };
      }
      // A rewrite without waits ends any it had, in the same statement (`rewriteRequest`).
      const [written] =
        expectedVersion === null ? await insertRequest.execute(params) : await rewriteRequest(params, expectedVersion);
      if (written === undefined) return { status: 'conflict' };
      return { status: 'parked', version: written.version };
    },

    ...scheduling.methods,
    ...eventStatements.methods,

    async getRequest(id: string): Promise<ParkedRequest | undefined> {
      assertOpen();
      const [row] = await selectRequest.execute({ id });
      return row === undefined ? undefined : toParkedRequest(row);
    },

    async listRequests(requester: string, since: number): Promise<ParkedRequest[]> {
      assertOpen();
      return (await selectRequestsOf.execute({ requester, since })).map(toParkedRequest);
    },

    async requestDecisions(list: readonly NewDecision[]): Promise<void> {
      assertOpen();
      if (list.length === 0) return;
      const insert = (rows: readonly NewDecision[], into: Pick<typeof db, 'insert'>) =>
        into.insert(decisions).values(rows.map(newDecisionRow)).onConflictDoNothing();
      if (list.length <= INSERT_DECISIONS_BATCH) {
        await insert(list, db);
        return;
      }
      await db.transaction(async (tx) => {
        for (let i = 0; i < list.length; i += INSERT_DECISIONS_BATCH) {
          await insert(list.slice(i, i + INSERT_DECISIONS_BATCH), tx);
        }
      });
    },

    async listDecisions(filter: DecisionFilter): Promise<DecisionRecord[]> {
      assertOpen();
      const rows = await db
        .select()
        .from(decisions)
        .where(decisionFilterWhere(decisions, filter))
        .orderBy(asc(decisions.requestedAt), asc(byCodePoint(decisions.key)));
      return rows.map(toDecisionRecord);
    },

    async recordDecision(decision: RecordDecision): Promise<RecordDecisionResult> {
      assertOpen();
      const { id, key, now, expectedVersion } = decision;
      // One transaction: the request's row lock, the checks, the decision, the version.
      return db.transaction(async (tx): Promise<RecordDecisionResult> => {
        const { request, row } = await lockDecision(tx, id, key);
        const failure = decisionFailure(row, request, expectedVersion, now);
        if (failure) return failure;
        // Closed meanwhile by a writer that takes no request lock (`closeDecisions`): nothing written.
        if (!(await decidePending(tx, id, key, decision, now))) return { status: 'closed' };
        const version = await bumpVersion(tx, id, now);
        return decisionRecorded(version);
      });
    },

    async recordVote(vote: RecordVote): Promise<RecordVoteResult> {
      assertOpen();
      const { id, key, now, expectedVersion } = vote;
      // As recordDecision: the request's row lock first, so votes and every other write queue.
      return db.transaction(async (tx): Promise<RecordVoteResult> => {
        const { request, row } = await lockDecision(tx, id, key);
        const [voted] = await tx
          .select({ voter: decisionVotes.voter })
          .from(decisionVotes)
          .where(and(eq(decisionVotes.id, id), eq(decisionVotes.key, key), eq(decisionVotes.voter, vote.voter)));
        const failure = voteFailure(row, request, expectedVersion, now, voted !== undefined);
        if (failure) return failure;
        const decide = vote.decide;
        // Closed meanwhile by a writer that takes no request lock (`closeDecisions`): nothing written.
        if (decide && !(await decidePending(tx, id, key, decide, now))) return { status: 'closed' };
        const version = await bumpVersion(tx, id, now);
        await tx.insert(decisionVotes).values(voteRow(vote, now, version));
        return decisionRecorded(version);
      });
    },

    async listVotes(id: string): Promise<VoteRecord[]> {
      assertOpen();
      const rows = await db
        .select()
        .from(decisionVotes)
        .where(eq(decisionVotes.id, id))
        .orderBy(asc(decisionVotes.version));
      return rows.map(toVoteRecord);
    },

    async closeDecisions(id: string, _now: number): Promise<number> {
      assertOpen();
      return (await closePending.execute({ id })).rowCount ?? 0;
    },

    async handDecision(hand: HandDecision): Promise<HandDecisionResult> {
      assertOpen();
      const { id, key, now, expectedVersion } = hand;
      // As recordDecision: the request's row lock first, then the checks, then both writes.
      return db.transaction(async (tx): Promise<HandDecisionResult> => {
        const { request, row } = await lockDecision(tx, id, key);
        const failure = decisionFailure(row, request, expectedVersion, now);
        if (failure) return failure;
        const handed = await tx
          .update(decisions)
          .set({ assignee: hand.handover.to, handover: handoverText(hand.handover) })
          .where(and(eq(decisions.id, id), eq(decisions.key, key), eq(decisions.status, 'pending')))
          .returning({ key: decisions.key });
        if (handed.length === 0) return { status: 'closed' };
        const version = await bumpVersion(tx, id, now);
        return { status: 'handed', version };
      });
    },

    async setDelegation(delegation: NewDelegation): Promise<void> {
      assertOpen();
      await db.insert(delegations).values(delegationRow(delegation)).onConflictDoNothing();
    },

    async listDelegations(filter: DelegationFilter): Promise<DelegationRecord[]> {
      assertOpen();
      const rows = await db
        .select()
        .from(delegations)
        .where(delegationFilterWhere(delegations, filter))
        .orderBy(desc(delegations.createdAt), asc(byCodePoint(delegations.id)));
      return rows.map(toDelegationRecord);
    },

    async removeDelegation(removal: RemoveDelegation): Promise<boolean> {
      assertOpen();
      const done = await db
        .update(delegations)
        .set({
          removedAt: removal.now,
          removedReason: removal.reason,
          removedBy: removal.by,
          removedByName: removal.byName,
        })
        .where(and(eq(delegations.id, removal.id), isNull(delegations.removedAt)))
        .returning({ id: delegations.id });
      return done.length === 1;
    },

    async rewriteLegacyDeciders(rewrite: (legacy: LegacyDecider) => DeciderRewrite): Promise<number> {
      assertOpen();
      // Done before (see LEGACY_DECIDERS_DONE_KEY): one primary-key read instead of a scan.
      if ((await selectLegacyDone.execute()).length > 0) return 0;
      let total = 0;
      for (;;) {
        const legacy = (await selectLegacyDeciders.execute({ limit: REWRITE_DECIDERS_BATCH })).map(toLegacyDecider);
        if (legacy.length === 0) {
          await markLegacyDone.execute();
          return total;
        }
        let changed = 0;
        for (const row of legacy) {
          changed += (await rewriteDecider.execute({ ...row, ...rewrite(row) })).rowCount ?? 0;
        }
        total += changed;
        // Nothing matched: another instance rewrote them first (or is doing so); it finishes the rest.
        if (changed === 0) return total;
      }
    },

    async claimStep(claim: ClaimStep): Promise<ClaimStepResult> {
      assertOpen();
      const params = claimParams(claim);
      const [inserted] = await insertStep.execute(params);
      if (inserted !== undefined) return { status: 'claimed', claims: inserted.claims };
      const [taken] = await takeStep.execute(params);
      if (taken !== undefined) return { status: 'claimed', claims: taken.claims };
      const [row] = await selectStep.execute({ id: claim.id, key: claim.key });
      return claimFailure(row, claim.id, claim.key);
    },

    async recordStep(record: RecordStep): Promise<RecordStepResult> {
      assertOpen();
      const [won] = await finishStep.execute({ ...record });
      if (won !== undefined) return { status: 'recorded' };
      const [row] = await selectStep.execute({ id: record.id, key: record.key });
      return row === undefined ? { status: 'unknown' } : { status: 'already_recorded', record: toStepRecord(row) };
    },

    async getStep(id: string, key: string): Promise<StepRecord | undefined> {
      assertOpen();
      const [row] = await selectStep.execute({ id, key });
      return row === undefined ? undefined : toStepRecord(row);
    },

    async reopenStep(id: string, key: string, _now: number): Promise<boolean> {
      assertOpen();
      const [reopened] = await reopenStep.execute({ id, key });
      return reopened !== undefined;
    },

    async listRuns(filter: RunFilter): Promise<ParkedRequest[]> {
      assertOpen();
      const rows = await db
        .select()
        .from(requests)
        .where(runFilterWhere(requests, filter, (id) => sql`${byCodePoint(requests.id)} > ${id}`))
        .orderBy(desc(requests.updatedAt), asc(byCodePoint(requests.id)))
        .limit(filter.limit);
      return rows.map(toParkedRequest);
    },

    async listSteps(id: string): Promise<StepRecord[]> {
      assertOpen();
      const rows = await db
        .select()
        .from(steps)
        .where(eq(steps.id, id))
        .orderBy(asc(byCodePoint(steps.key)));
      return rows.map(toStepRecord);
    },

    async prune(now: number): Promise<number> {
      assertOpen();
      let removed = 0;
      for (;;) {
        if (connection.closed) return removed;
        const result = await db.execute(sql`
          delete from baton_steps where ctid in (
            select ctid from baton_steps where expires_at < ${now} limit ${PRUNE_BATCH} for update skip locked
          )`);
        const count = result.rowCount ?? 0;
        removed += count;
        if (count < PRUNE_BATCH) break;
      }
      for (const statement of [pruneRedemptions, pruneTokens, scheduling.pruneOutbox, eventStatements.pruneEvents]) {
        for (;;) {
          if (connection.closed) return removed;
          const result = await statement.execute({ now, limit: PRUNE_BATCH });
          const count = result.rowCount ?? 0;
          removed += count;
          if (count < PRUNE_BATCH) break;
        }
      }
      for (;;) {
        if (connection.closed) return removed;
        // One statement per batch: the expired requests (locked, skipping those another
        // instance is pruning) and their decisions go together or not at all.
        const result = await db.execute<{ requests: number; decisions: number }>(sql`
          with doomed as (
            select id from baton_requests where expires_at < ${now}
            limit ${PRUNE_REQUESTS_BATCH} for update skip locked
          ), gone_decisions as (
            delete from baton_decisions where id in (select id from doomed) returning 1
          ), gone_waits as (
            delete from baton_event_waits where id in (select id from doomed) returning 1
          ), gone_votes as (
            delete from baton_decision_votes where id in (select id from doomed) returning 1
          ), gone_requests as (
            delete from baton_requests where id in (select id from doomed) returning 1
          )
          select (select count(*) from gone_requests)::int as requests,
                 (select count(*) from gone_decisions)::int as decisions`);
        const gone = result.rows[0]!;
        removed += gone.requests + gone.decisions;
        if (gone.requests < PRUNE_REQUESTS_BATCH) break;
      }
      return removed;
    },

    async close(): Promise<void> {
      if (connection.closed) return;
      await schedule.stop();
      closing = true;
      await batches?.drain();
      await connection.close();
    },
  };

  let closing = false;
  const guarded = guardConnectionFailures(ledger, where);
  const counted = withStats(guarded, {
    driver: 'postgres',
    ping: async () => {
      assertOpen();
      await pool.query('select 1').catch((error: unknown) => {
        throw toUnavailable(error, where);
      });
    },
    extra: () => ({
      ...(batches
        ? { batches: { redeem: batchCounts.redeem.snapshot(), outcome: batchCounts.outcome.snapshot() } }
        : {}),
      pool: { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount },
    }),
  });
  const schedule = startPruning((now) => counted.prune(now), options);
  return counted;

  function assertOpen(): void {
    if (connection.closed || closing) throw new LedgerError(`The PostgreSQL ledger ${where} is closed`);
  }
}

/** `ledger` with every call's connection failures turned into `LedgerUnavailableError`. */
function guardConnectionFailures(ledger: Ledger, where: string): Ledger {
  const guarded: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(ledger) as [string, (...args: unknown[]) => Promise<unknown>][]) {
    guarded[name] =
      name === 'close'
        ? method
        : (...args: unknown[]) =>
            method.apply(ledger, args).catch((error: unknown) => {
              throw toUnavailable(error, where);
            });
  }
  return guarded as unknown as Ledger;
}

/** A printable description of a caller's pool (no password). */
