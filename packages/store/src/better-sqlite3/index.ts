/**
 * The SQLite ledger on better-sqlite3: the embedded default, one file that
 * several processes on the same host may share. The file runs in WAL mode
 * with `synchronous = NORMAL` (a committed redemption survives a process
 * crash; only an OS crash or power loss can drop the last commits) and a busy
 * timeout so writers queue instead of failing. A redemption is decided by
 * one atomic statement (`INSERT ... ON CONFLICT DO NOTHING RETURNING`, or an
 * `UPDATE ... WHERE used_at IS NULL ... RETURNING` for tokens), which SQLite
 * serialises across processes: exactly one caller wins. Parked requests
 * and decisions work the same way: a compare-and-set `UPDATE ... WHERE
 * version = expected`, and a decision is recorded in one immediate transaction
 * that checks it is pending and in time and that its request still waits at
 * the version the decider read, then records it and bumps that version. Statements are
 * prepared once through drizzle, and writes issued in the same event-loop
 * turn share one commit (`writeBatcher.ts`). WAL needs shared memory, so
 * never put the file on a network filesystem.
 */
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
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
import { withStats } from '../core/stats.js';
import { claimFailure, toStepRecord } from '../core/steps.js';
import { generateTokenCode, hashTokenCode, MAX_TOKEN_CODE_LENGTH } from '../core/tokens.js';
import {
  decisions,
  decisionVotes,
  delegations,
  eventWaits,
  meta,
  redemptions,
  requests,
  steps,
  tokens,
} from '../schema/sqlite.js';
import { createSqliteEvents } from './events.js';
import { openMigratedSqlite } from './file.js';
import { createSqliteScheduling } from './scheduling.js';
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

/** Expired requests pruned per transaction (each takes its decisions with it). */
const PRUNE_REQUESTS_BATCH = 500;

/** Decisions inserted per statement (13 bound values each, far below SQLite's limit). */
const INSERT_DECISIONS_BATCH = 200;

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
    .prepare();
  // Compare-and-set: the row is rewritten only if it still has the version the writer read.
  const updateRequest = db
    .update(requests)
    .set({
      flow: sql`${sql.placeholder('flow')}`,
      requester: sql`${sql.placeholder('requester')}`,
      requesterName: sql`${sql.placeholder('requesterName')}`,
      status: sql`${sql.placeholder('status')}`,
      waitingFor: sql`${sql.placeholder('waitingFor')}`,
      state: sql`${sql.placeholder('state')}`,
      version: sql`${requests.version} + 1`,
      updatedAt: sql`${sql.placeholder('now')}`,
      expiresAt: sql`${sql.placeholder('expiresAt')}`,
      // Every write recomputes the next timer and ends a scheduler's claim.
      dueAt: sql`${sql.placeholder('dueAt')}`,
      leaseOwner: null,
      leaseUntil: null,
    })
    .where(and(eq(requests.id, sql.placeholder('id')), eq(requests.version, sql.placeholder('expected'))))
    .returning({ version: requests.version })
    .prepare();
  const selectRequest = db
    .select()
    .from(requests)
    .where(eq(requests.id, sql.placeholder('id')))
    .prepare();
  const selectRequestsOf = db
    .select()
    .from(requests)
    .where(and(eq(requests.requester, sql.placeholder('requester')), gte(requests.updatedAt, sql.placeholder('since'))))
    .orderBy(desc(requests.updatedAt), asc(requests.id))
    .prepare();
  // Recorded inside `recordDecisionTx` (and `recordVoteTx`), after its checks, under the write lock.
  const decideRow = db
    .update(decisions)
    .set({
      status: 'decided',
      decider: sql`${sql.placeholder('decider')}`,
      deciderName: sql`${sql.placeholder('deciderName')}`,
      content: sql`${sql.placeholder('content')}`,
      decidedAt: sql`${sql.placeholder('now')}`,
      deciderDisplay: sql`${sql.placeholder('deciderDisplay')}`,
      via: sql`${sql.placeholder('via')}`,
      assignee: null,
      onBehalfOf: sql`${sql.placeholder('onBehalfOf')}`,
      onBehalfOfName: sql`${sql.placeholder('onBehalfOfName')}`,
    })
    .where(
      and(
        eq(decisions.id, sql.placeholder('id')),
        eq(decisions.key, sql.placeholder('key')),
        eq(decisions.status, 'pending'),
        or(isNull(decisions.deadline), gt(decisions.deadline, sql.placeholder('now'))),
      ),
    )
    .returning({ key: decisions.key })
    .prepare();
  const selectDecisionState = db
    .select({ status: decisions.status, deadline: decisions.deadline })
    .from(decisions)
    .where(and(eq(decisions.id, sql.placeholder('id')), eq(decisions.key, sql.placeholder('key'))))
    .prepare();
  // Decisions decided before schema 6: the migration left the readable decider in decider_name.
  const selectLegacyDeciders = db
    .select({ id: decisions.id, key: decisions.key, deciderName: decisions.deciderName, content: decisions.content })
    .from(decisions)
    .where(and(isNull(decisions.decider), isNotNull(decisions.deciderName)))
    .limit(sql.placeholder('limit'))
    .prepare();
  const selectLegacyDone = db
    .select({ value: meta.value })
    .from(meta)
    .where(eq(meta.key, LEGACY_DECIDERS_DONE_KEY))
    .prepare();
  const markLegacyDone = db
    .insert(meta)
    .values({ key: LEGACY_DECIDERS_DONE_KEY, value: '1' })
    .onConflictDoNothing()
    .prepare();
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
    .prepare();
  const rewriteDeciders = client.transaction((rows: readonly (LegacyDecider & DeciderRewrite)[]) =>
    rows.reduce((changed, row) => changed + rewriteDecider.run({ ...row }).changes, 0),
  );
  const closePending = db
    .update(decisions)
    .set({ status: 'closed' })
    .where(and(eq(decisions.id, sql.placeholder('id')), eq(decisions.status, 'pending')))
    .prepare();
  const selectRequestVersion = db
    .select({ status: requests.status, version: requests.version })
    .from(requests)
    .where(eq(requests.id, sql.placeholder('id')))
    .prepare();
  const bumpRequest = db
    .update(requests)
    .set({ version: sql`${requests.version} + 1`, updatedAt: sql`${sql.placeholder('now')}` })
    .where(and(eq(requests.id, sql.placeholder('id')), eq(requests.version, sql.placeholder('expected'))))
    .returning({ version: requests.version })
    .prepare();
  /**
   * A decision and its request's version, together or not at all: both rows are read and
   * written under the write lock (`BEGIN IMMEDIATE`, or a savepoint inside a batch), so a
   * withdrawal, a timer or another decider that wrote the request first makes this one fail
   * with what won, and one that comes later finds the version moved.
   */
  const recordDecisionTx = client.transaction((decision: RecordDecision): RecordDecisionResult => {
    const { id, key, now, expectedVersion: expected } = decision;
    const failure = decisionFailure(
      selectDecisionState.get({ id, key }),
      selectRequestVersion.get({ id }),
      expected,
      now,
    );
    if (failure) return failure;
    const bumped = bumpRequest.get({ id, expected, now });
    const recorded = decideRow.get({
      id,
      key,
      decider: decision.decider,
      deciderName: decision.deciderName ?? null,
      content: decision.content,
      deciderDisplay: decision.deciderDisplay ?? null,
      via: decision.via ?? null,
      onBehalfOf: decision.onBehalfOf ?? null,
      onBehalfOfName: decision.onBehalfOfName ?? null,
      now,
    });
    // Checked above under the same lock: a miss here is a broken database, and rolls both back.
    if (bumped === undefined || recorded === undefined) {
      throw new LedgerError(`Recording decision "${key}" of request "${id}" found its rows changed under the lock`);
    }
    return decisionRecorded(bumped.version);
  });
  const selectVote = db
    .select({ voter: decisionVotes.voter })
    .from(decisionVotes)
    .where(
      and(
        eq(decisionVotes.id, sql.placeholder('id')),
        eq(decisionVotes.key, sql.placeholder('key')),
        eq(decisionVotes.voter, sql.placeholder('voter')),
      ),
    )
    .prepare();
  const selectVotes = db
    .select()
    .from(decisionVotes)
    .where(eq(decisionVotes.id, sql.placeholder('id')))
    .orderBy(asc(decisionVotes.version))
    .prepare();
  /** A vote, the decision it completes (if it does) and its request's version, under the write lock. */
  const recordVoteTx = client.transaction((vote: RecordVote): RecordVoteResult => {
    const { id, key, now, expectedVersion: expected } = vote;
    const failure = voteFailure(
      selectDecisionState.get({ id, key }),
      selectRequestVersion.get({ id }),
      expected,
      now,
      selectVote.get({ id, key, voter: vote.voter }) !== undefined,
    );
    if (failure) return failure;
    const bumped = bumpRequest.get({ id, expected, now });
    if (bumped === undefined) {
      throw new LedgerError(`Recording a vote on "${key}" of request "${id}" found its rows changed under the lock`);
    }
    db.insert(decisionVotes)
      .values(voteRow(vote, now, bumped.version))
      .run();
    const decide = vote.decide;
    const recorded =
      decide === undefined
        ? { key }
        : decideRow.get({
            id,
            key,
            decider: decide.decider,
            deciderName: decide.deciderName ?? null,
            content: decide.content,
            deciderDisplay: decide.deciderDisplay ?? null,
            via: decide.via ?? null,
            onBehalfOf: null,
            onBehalfOfName: null,
            now,
          });
    if (recorded === undefined) {
      throw new LedgerError(`Recording a vote on "${key}" of request "${id}" found its rows changed under the lock`);
    }
    return decisionRecorded(bumped.version);
  });
  /** A hand-over and its request's version, together or not at all (as `recordDecisionTx`). */
  const handDecisionTx = client.transaction((hand: HandDecision): HandDecisionResult => {
    const { id, key, now, expectedVersion: expected } = hand;
    const failure = decisionFailure(
      selectDecisionState.get({ id, key }),
      selectRequestVersion.get({ id }),
      expected,
      now,
    );
    if (failure) return failure;
    const bumped = bumpRequest.get({ id, expected, now });
    const handed = db
      .update(decisions)
      .set({ assignee: hand.handover.to, handover: handoverText(hand.handover) })
      .where(and(eq(decisions.id, id), eq(decisions.key, key), eq(decisions.status, 'pending')))
      .run();
    if (bumped === undefined || handed.changes !== 1) {
      throw new LedgerError(`Handing decision "${key}" of request "${id}" over found its rows changed under the lock`);
    }
    return { status: 'handed', version: bumped.version };
  });
  const selectExpiredRequests = db
    .select({ id: requests.id })
    .from(requests)
    .where(lt(requests.expiresAt, sql.placeholder('now')))
    .limit(sql.placeholder('limit'))
    .prepare();
  /** One batch of expired requests and their decisions, deleted together (or not at all). */
  const pruneRequestsBatch = client.transaction((now: number): { requests: number; decisions: number } => {
    const ids = selectExpiredRequests.all({ now, limit: PRUNE_REQUESTS_BATCH }).map((row) => row.id);
    if (ids.length === 0) return { requests: 0, decisions: 0 };
    const gone = db.delete(decisions).where(inArray(decisions.id, ids)).run().changes;
    db.delete(decisionVotes).where(inArray(decisionVotes.id, ids)).run();
    db.delete(eventWaits).where(inArray(eventWaits.id, ids)).run();
    return { requests: db.delete(requests).where(inArray(requests.id, ids)).run().changes, decisions: gone };
  });
  const insertDecisions = client.transaction((list: readonly NewDecision[]) => {
    for (let i = 0; i < list.length; i += INSERT_DECISIONS_BATCH) {
      db.insert(decisions)
        .values(list.slice(i, i + INSERT_DECISIONS_BATCH).map(newDecisionRow))
        .onConflictDoNothing()
        .run();
    }
  });

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
    .prepare();
  // Ours, or its lease ended: of concurrent claimers exactly one matches (the others then see its lease).
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
    .prepare();
  const finishStep = db
    .update(steps)
    .set({
      status: sql`${sql.placeholder('status')}`,
      outcome: sql`${sql.placeholder('outcome')}`,
      recordedAt: sql`${sql.placeholder('now')}`,
    })
    .where(and(eq(steps.id, sql.placeholder('id')), eq(steps.key, sql.placeholder('key')), eq(steps.status, 'running')))
    .returning({ key: steps.key })
    .prepare();
  // An operator's retry: a failed step back to running, unowned, its lease ended (the next claim takes it).
  const reopenStep = db
    .update(steps)
    .set({ status: 'running', owner: '', leaseUntil: 0, outcome: null, recordedAt: null })
    .where(and(eq(steps.id, sql.placeholder('id')), eq(steps.key, sql.placeholder('key')), eq(steps.status, 'failed')))
    .returning({ key: steps.key })
    .prepare();
  const selectStep = db
    .select()
    .from(steps)
    .where(and(eq(steps.id, sql.placeholder('id')), eq(steps.key, sql.placeholder('key'))))
    .prepare();
  const pruneSteps = db
    .delete(steps)
    .where(
      sql`(${steps.id}, ${steps.key}) in (select ${steps.id}, ${steps.key} from ${steps} where ${steps.expiresAt} < ${sql.placeholder('now')} limit ${sql.placeholder('limit')})`,
    )
    .prepare();

  // The writes of parked requests and decisions go through the same batcher as redemptions.
  // Not for throughput (they are rare) but for order and atomicity: a write that skipped the
  // queue would overtake writes this process issued before it in the same event-loop turn
  // (a redemption, an outcome), and each write is one synchronous closure, so a conditional
  // update and the read that explains a lost race run back to back, inside the batch's
  // transaction when there is one. Multi-statement writes wrap themselves in a transaction
  // (a savepoint inside a batch), so a failure undoes all of that write and nothing else.
  const writes = new WriteBatcher(client);
  const scheduling = createSqliteScheduling(db, client, writes, assertOpen);
  const eventStatements = createSqliteEvents(db, writes, assertOpen);
  /** A parked write, the notifications its round raised and its event waits: together or not at all. */
  const parkWithOutbox = client.transaction(
    (write: () => { version: number } | undefined, request: ParkRequest, hadWaits: boolean) => {
      const written = write();
      if (written === undefined) return written;
      if (request.outbox && request.outbox.length > 0) scheduling.insertOutbox(request.outbox, request.now);
      const waits = request.status === 'waiting' ? (request.events ?? []) : [];
      if (hadWaits || waits.length > 0) eventStatements.replaceWaits(request.id, request.flow, waits);
      return written;
    },
  );
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

    async parkRequest(request: ParkRequest, expectedVersion: number | null): Promise<ParkResult> {
      assertOpen();
      const params = parkParams(request);
      const write = () =>
        expectedVersion === null
          ? insertRequest.get(params)
          : updateRequest.get({ ...params, expected: expectedVersion });
      // A rewrite replaces the event waits (there may be some); a first write only adds its own.
      const hadWaits = expectedVersion !== null;
      const simple = (request.outbox ?? []).length === 0 && !hadWaits && (request.events ?? []).length === 0;
      const written = await writes.submit(() =>
        simple ? write() : parkWithOutbox.immediate(write, request, hadWaits),
      );
      return written === undefined ? { status: 'conflict' } : { status: 'parked', version: written.version };
    },

    ...scheduling.methods,
    ...eventStatements.methods,

    async getRequest(id: string): Promise<ParkedRequest | undefined> {
      assertOpen();
      const row = selectRequest.get({ id });
      return row === undefined ? undefined : toParkedRequest(row);
    },

    async listRequests(requester: string, since: number): Promise<ParkedRequest[]> {
      assertOpen();
      return selectRequestsOf.all({ requester, since }).map(toParkedRequest);
    },

    async requestDecisions(list: readonly NewDecision[]): Promise<void> {
      assertOpen();
      if (list.length === 0) return;
      await writes.submit(() => insertDecisions.immediate(list));
    },

    async listDecisions(filter: DecisionFilter): Promise<DecisionRecord[]> {
      assertOpen();
      return db
        .select()
        .from(decisions)
        .where(decisionFilterWhere(decisions, filter))
        .orderBy(asc(decisions.requestedAt), asc(decisions.key))
        .all()
        .map(toDecisionRecord);
    },

    async recordDecision(decision: RecordDecision): Promise<RecordDecisionResult> {
      assertOpen();
      return writes.submit(() => recordDecisionTx.immediate(decision));
    },

    async recordVote(vote: RecordVote): Promise<RecordVoteResult> {
      assertOpen();
      return writes.submit(() => recordVoteTx.immediate(vote));
    },

    async listVotes(id: string): Promise<VoteRecord[]> {
      assertOpen();
      return selectVotes.all({ id }).map(toVoteRecord);
    },

    async closeDecisions(id: string, _now: number): Promise<number> {
      assertOpen();
      return writes.submit(() => closePending.run({ id }).changes);
    },

    async handDecision(hand: HandDecision): Promise<HandDecisionResult> {
      assertOpen();
      return writes.submit(() => handDecisionTx.immediate(hand));
    },

    async setDelegation(delegation: NewDelegation): Promise<void> {
      assertOpen();
      await writes.submit(() => db.insert(delegations).values(delegationRow(delegation)).onConflictDoNothing().run());
    },

    async listDelegations(filter: DelegationFilter): Promise<DelegationRecord[]> {
      assertOpen();
      return db
        .select()
        .from(delegations)
        .where(delegationFilterWhere(delegations, filter))
        .orderBy(desc(delegations.createdAt), asc(delegations.id))
        .all()
        .map(toDelegationRecord);
    },

    async removeDelegation(removal: RemoveDelegation): Promise<boolean> {
      assertOpen();
      const done = await writes.submit(() =>
        db
          .update(delegations)
          .set({
            removedAt: removal.now,
            removedReason: removal.reason,
            removedBy: removal.by,
            removedByName: removal.byName,
          })
          .where(and(eq(delegations.id, removal.id), isNull(delegations.removedAt)))
          .run(),
      );
      return done.changes === 1;
    },

    async rewriteLegacyDeciders(rewrite: (legacy: LegacyDecider) => DeciderRewrite): Promise<number> {
      assertOpen();
      // Done before (see LEGACY_DECIDERS_DONE_KEY): one primary-key read instead of a scan.
      if (selectLegacyDone.get() !== undefined) return 0;
      let total = 0;
      for (;;) {
        const legacy = selectLegacyDeciders.all({ limit: REWRITE_DECIDERS_BATCH }).map(toLegacyDecider);
        if (legacy.length === 0) {
          await writes.submit(() => markLegacyDone.run());
          return total;
        }
        const rows = legacy.map((row) => ({ ...row, ...rewrite(row) }));
        const changed = await writes.submit(() => rewriteDeciders.immediate(rows));
        total += changed;
        // Nothing matched: another instance rewrote them first (or is doing so); it finishes the rest.
        if (changed === 0) return total;
      }
    },

    async claimStep(claim: ClaimStep): Promise<ClaimStepResult> {
      assertOpen();
      const params = claimParams(claim);
      return writes.submit((): ClaimStepResult => {
        const inserted = insertStep.get(params);
        if (inserted !== undefined) return { status: 'claimed', claims: inserted.claims };
        const taken = takeStep.get(params);
        if (taken !== undefined) return { status: 'claimed', claims: taken.claims };
        return claimFailure(selectStep.get({ id: claim.id, key: claim.key }), claim.id, claim.key);
      });
    },

    async recordStep(record: RecordStep): Promise<RecordStepResult> {
      assertOpen();
      return writes.submit((): RecordStepResult => {
        if (finishStep.get({ ...record }) !== undefined) return { status: 'recorded' };
        const row = selectStep.get({ id: record.id, key: record.key });
        return row === undefined ? { status: 'unknown' } : { status: 'already_recorded', record: toStepRecord(row) };
      });
    },

    async getStep(id: string, key: string): Promise<StepRecord | undefined> {
      assertOpen();
      const row = selectStep.get({ id, key });
      return row === undefined ? undefined : toStepRecord(row);
    },

    async reopenStep(id: string, key: string, _now: number): Promise<boolean> {
      assertOpen();
      return writes.submit(() => reopenStep.get({ id, key }) !== undefined);
    },

    async listRuns(filter: RunFilter): Promise<ParkedRequest[]> {
      assertOpen();
      return db
        .select()
        .from(requests)
        .where(runFilterWhere(requests, filter, (id) => gt(requests.id, id)))
        .orderBy(desc(requests.updatedAt), asc(requests.id))
        .limit(filter.limit)
        .all()
        .map(toParkedRequest);
    },

    async listSteps(id: string): Promise<StepRecord[]> {
      assertOpen();
      return db.select().from(steps).where(eq(steps.id, id)).orderBy(asc(steps.key)).all().map(toStepRecord);
    },

    async prune(now: number): Promise<number> {
      assertOpen();
      let removed = 0;
      for (const statement of [
        pruneRedemptions,
        pruneTokens,
        pruneSteps,
        scheduling.pruneOutbox,
        eventStatements.pruneEvents,
      ]) {
        for (;;) {
          if (closed) return removed;
          const { changes } = statement.run({ now, limit: PRUNE_BATCH });
          removed += changes;
          if (changes < PRUNE_BATCH) break;
          await yieldToEventLoop();
        }
      }
      for (;;) {
        if (closed) return removed;
        const gone = pruneRequestsBatch.immediate(now);
        removed += gone.requests + gone.decisions;
        if (gone.requests < PRUNE_REQUESTS_BATCH) break;
        await yieldToEventLoop();
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

  const ping = client.prepare('select 1');
  const counted = withStats(ledger, {
    driver: 'sqlite',
    ping: async () => {
      assertOpen();
      ping.get();
    },
  });
  const schedule = startPruning((now) => counted.prune(now), options);
  return counted;

  function assertOpen(): void {
    if (closed) throw new LedgerError(`The SQLite ledger ${where} is closed`);
  }
}
