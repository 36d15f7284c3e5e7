/**
 * The SQLite ledger's `decisions` facet: decisions owed by others, quorum
 * votes, hand-overs, absence delegates and the one-time rewrite of deciders
 * recorded before schema 6. A decision, a vote or a hand-over is written in
 * one immediate transaction that checks the decision is pending and in time
 * and that its request still waits at the version the decider read, then
 * records it and bumps that version (both rows under the write lock).
 */
import type {
  DeciderRewrite,
  DecisionFilter,
  DecisionRecord,
  DelegationFilter,
  DelegationRecord,
  HandDecision,
  HandDecisionResult,
  LedgerDecisions,
  LegacyDecider,
  NewDecision,
  NewDelegation,
  RecordDecision,
  RecordDecisionResult,
  RecordVote,
  RecordVoteResult,
  RemoveDelegation,
  VoteRecord,
} from '@baton/engine';
import { and, asc, desc, eq, gt, isNotNull, isNull, or, sql } from 'drizzle-orm';
import { decisionFilterWhere } from '../core/decisionFilter.js';
import { delegationFilterWhere, delegationRow, handoverText, toDelegationRecord } from '../core/delegations.js';
import { LedgerError } from '../core/errors.js';
import { newDecisionRow } from '../core/params.js';
import {
  LEGACY_DECIDERS_DONE_KEY,
  REWRITE_DECIDERS_BATCH,
  toDecisionRecord,
  toLegacyDecider,
  toVoteRecord,
  voteRow,
} from '../core/requests.js';
import { decisionFailure, decisionRecorded, voteFailure } from '../core/results.js';
import { decisions, decisionVotes, delegations, meta, requests } from '../schema/sqlite.js';
import type { SqliteHandle } from './handle.js';

/** Decisions inserted per statement (13 bound values each, far below SQLite's limit). */
const INSERT_DECISIONS_BATCH = 200;

/** The `decisions` facet over `handle`. */
export function sqliteDecisions(handle: SqliteHandle): LedgerDecisions {
  const { client, db, writes, assertOpen } = handle;
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
  const insertDecisions = client.transaction((list: readonly NewDecision[]) => {
    for (let i = 0; i < list.length; i += INSERT_DECISIONS_BATCH) {
      db.insert(decisions)
        .values(list.slice(i, i + INSERT_DECISIONS_BATCH).map(newDecisionRow))
        .onConflictDoNothing()
        .run();
    }
  });

  return {
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
  };
}
