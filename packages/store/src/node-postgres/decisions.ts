/**
 * The PostgreSQL ledger's `decisions` facet: decisions owed by others,
 * quorum votes, hand-overs, absence delegates and the one-time rewrite of
 * deciders recorded before schema 6. A decision, a vote or a hand-over is
 * written in one transaction that locks its request's row, checks the
 * decision is pending and in time and the request still waits at the version
 * the decider read, then records it and bumps that version: row locks make
 * exactly one concurrent writer win.
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
import { and, asc, desc, eq, isNotNull, isNull, sql } from 'drizzle-orm';
import { decisionFilterWhere } from '../core/decisionFilter.js';
import { delegationFilterWhere, delegationRow, handoverText, toDelegationRecord } from '../core/delegations.js';
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
import { decisions, decisionVotes, delegations, meta, requests } from '../schema/pg.js';
import { byCodePoint, type PostgresHandle, type Tx } from './handle.js';

/** Decisions inserted per statement (13 bound values each, far below PostgreSQL's 65 535). */
const INSERT_DECISIONS_BATCH = 1000;

/** The `decisions` facet over `handle`. */
export function postgresDecisions(handle: PostgresHandle): LedgerDecisions {
  const { db, assertOpen } = handle;

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

  return {
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
  };
}
