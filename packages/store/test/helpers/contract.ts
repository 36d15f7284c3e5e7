/**
 * The behaviour every ledger must share, as one suite run against the memory,
 * SQLite and PostgreSQL ledgers: redemption, replay-safe retry, replay,
 * expiry, single-use tokens, parked requests (compare-and-set versions,
 * listing), decisions (requested idempotently, listed for a decider, recorded
 * once, closed), durable steps (claimed under a lease, renewed, taken over
 * once the lease ended, recorded once), pruning and closing. Times are explicit (the engine's clock
 * is passed in), so nothing here sleeps. The ledger is shared by the whole
 * suite, so every test uses fresh random ids and requesters.
 */
import { randomBytes } from 'node:crypto';
import type { FullLedger, NewDecision, ParkRequest, RecordDecision, RunFilter } from '@baton/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/** A fixed "now" for the suite (ms). */
export const T0 = 1_800_000_000_000;

/** A random jti like the codec's (96 bits, base64url). */
export function newJti(): string {
  return randomBytes(12).toString('base64url');
}

const HOUR = 3600_000;
const DAY = 24 * HOUR;

/** A fresh random id (request ids, requester hashes), so tests sharing a ledger never meet. */
export function newId(prefix = 'R'): string {
  return `${prefix}-${randomBytes(9).toString('base64url')}`;
}

/** A decision row's delegation fields (schema 12) when it was never handed over nor decided for someone. */
export const NOT_DELEGATED = { assignee: null, handover: null, onBehalfOf: null, onBehalfOfName: null } as const;

/** A parked request as the engine would write it, waiting for a manager. */
export function parked(id: string, fields: Partial<ParkRequest> = {}): ParkRequest {
  return {
    id,
    flow: 'expense_approval',
    requester: 'hash-alice',
    requesterName: null,
    status: 'waiting',
    waitingFor: [{ key: 'manager_approval', role: 'manager' }],
    state: 'sealed-state-1',
    now: T0,
    expiresAt: T0 + 30 * DAY,
    ...fields,
  };
}

/** A decision as the engine would request it: a manager's, due in an hour. */
export function decisionRequest(id: string, key: string, fields: Partial<NewDecision> = {}): NewDecision {
  return {
    id,
    key,
    flow: 'expense_approval',
    role: 'manager',
    message: 'Approve 120 EUR for travel?',
    schema: '{"type":"object","properties":{"approve":{"type":"boolean"}},"required":["approve"]}',
    requester: 'hash-alice',
    requestedAt: T0,
    deadline: T0 + HOUR,
    ...fields,
  };
}

/** Run the shared contract against ledgers made by `open` (one per suite) and torn down by `dispose`. */
export function ledgerContract(name: string, open: () => Promise<FullLedger>, dispose?: () => Promise<void>): void {
  describe(`${name}: Ledger contract`, () => {
    let ledger: FullLedger;
    beforeAll(async () => {
      ledger = await open();
    });
    afterAll(async () => {
      await ledger?.close();
      await dispose?.();
    });

    /** As the engine does: park each request (waiting, version 1) unless parked, then request its decisions. */
    const requestDecisions = async (list: readonly NewDecision[]) => {
      for (const id of new Set(list.map((d) => d.id))) {
        if (!(await ledger.requests.getRequest(id)))
          await ledger.requests.parkRequest(parked(id, { requester: 'hash-deciding' }), null);
      }
      await ledger.decisions.requestDecisions(list);
    };
    /** As the engine does: record at the version of the request just read. */
    const recordDecision = async (decision: Omit<RecordDecision, 'expectedVersion'>) =>
      ledger.decisions.recordDecision({
        ...decision,
        expectedVersion: (await ledger.requests.getRequest(decision.id))?.version ?? 1,
      });

    const request = (jti: string, digest = 'digest-a', expiresAt = T0 + 60_000, now = T0) => ({
      jti,
      responsesDigest: digest,
      expiresAt,
      now,
    });

    describe('redeem', () => {
      it('redeems a jti the first time', async () => {
        expect(await ledger.redemptions.redeem(request(newJti()))).toEqual({ status: 'redeemed' });
      });

      it('answers in_progress, with when it was redeemed, while the first round recorded no outcome', async () => {
        const jti = newJti();
        await ledger.redemptions.redeem(request(jti, 'digest-a', T0 + 60_000, T0 + 5));
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({ status: 'in_progress', redeemedAt: T0 + 5 });
        expect(await ledger.redemptions.redeem(request(jti, 'digest-a', T0 + 60_000, T0 + 1000))).toEqual({
          status: 'in_progress',
          redeemedAt: T0 + 5,
        });
        // Other answers are a replay, running or not; and once the outcome lands it is a retry.
        expect(await ledger.redemptions.redeem(request(jti, 'digest-b'))).toEqual({ status: 'replayed' });
        await ledger.redemptions.recordOutcome(jti, 'sealed');
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({ status: 'retry', outcome: 'sealed' });
      });

      it('answers an in-progress jti past its envelope expiry as replayed', async () => {
        const jti = newJti();
        await ledger.redemptions.redeem(request(jti, 'd', T0 + 10_000));
        expect(await ledger.redemptions.redeem(request(jti, 'd', T0 + 10_000, T0 + 10_001))).toEqual({
          status: 'replayed',
        });
      });

      it('answers a retry with identical responses with the recorded outcome, every time', async () => {
        const jti = newJti();
        await ledger.redemptions.redeem(request(jti));
        await ledger.redemptions.recordOutcome(jti, 'sealed-outcome-1');
        for (let i = 0; i < 3; i++) {
          expect(await ledger.redemptions.redeem(request(jti, 'digest-a', T0 + 60_000, T0 + i))).toEqual({
            status: 'retry',
            outcome: 'sealed-outcome-1',
          });
        }
      });

      it('rejects the same jti with different responses, even after an outcome was recorded', async () => {
        const jti = newJti();
        await ledger.redemptions.redeem(request(jti));
        expect(await ledger.redemptions.redeem(request(jti, 'digest-b'))).toEqual({ status: 'replayed' });
        await ledger.redemptions.recordOutcome(jti, 'sealed');
        expect(await ledger.redemptions.redeem(request(jti, 'digest-b'))).toEqual({ status: 'replayed' });
        expect(await ledger.redemptions.redeem(request(jti, ''))).toEqual({ status: 'replayed' });
      });

      it('keeps the first recorded outcome', async () => {
        const jti = newJti();
        await ledger.redemptions.redeem(request(jti));
        await ledger.redemptions.recordOutcome(jti, 'first');
        await ledger.redemptions.recordOutcome(jti, 'second');
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({ status: 'retry', outcome: 'first' });
      });

      it('stores large outcomes byte for byte', async () => {
        const jti = newJti();
        const outcome = `${randomBytes(96 * 1024).toString('base64url')}ü€`;
        await ledger.redemptions.redeem(request(jti));
        await ledger.redemptions.recordOutcome(jti, outcome);
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({ status: 'retry', outcome });
      });

      it('rejects a retry after the envelope expired, and accepts one at the last valid millisecond', async () => {
        const jti = newJti();
        const expiresAt = T0 + 10_000;
        await ledger.redemptions.redeem(request(jti, 'd', expiresAt));
        await ledger.redemptions.recordOutcome(jti, 'sealed');
        expect(await ledger.redemptions.redeem(request(jti, 'd', expiresAt, expiresAt))).toEqual({
          status: 'retry',
          outcome: 'sealed',
        });
        expect(await ledger.redemptions.redeem(request(jti, 'd', expiresAt, expiresAt + 1))).toEqual({
          status: 'replayed',
        });
      });

      it('never redeems an envelope that is already expired', async () => {
        const jti = newJti();
        expect(await ledger.redemptions.redeem(request(jti, 'd', T0, T0 + 1))).toEqual({ status: 'replayed' });
      });

      it('ignores an outcome for a jti it never redeemed', async () => {
        const jti = newJti();
        await ledger.redemptions.recordOutcome(jti, 'sealed');
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({ status: 'redeemed' });
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({ status: 'in_progress', redeemedAt: T0 });
      });

      it('releases a redemption without an outcome and with the same digest, and nothing else', async () => {
        const jti = newJti();
        await ledger.redemptions.redeem(request(jti));
        expect(await ledger.redemptions.releaseRedemption(jti, 'digest-b')).toBe(false);
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({ status: 'in_progress', redeemedAt: T0 });
        expect(await ledger.redemptions.releaseRedemption(jti, 'digest-a')).toBe(true);
        expect(await ledger.redemptions.releaseRedemption(jti, 'digest-a')).toBe(false);
        // Released: the same state redeems again, once.
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({ status: 'redeemed' });
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({ status: 'in_progress', redeemedAt: T0 });
        // An acknowledged round (outcome recorded) is never released.
        await ledger.redemptions.recordOutcome(jti, 'sealed');
        expect(await ledger.redemptions.releaseRedemption(jti, 'digest-a')).toBe(false);
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({ status: 'retry', outcome: 'sealed' });
        expect(await ledger.redemptions.releaseRedemption(newJti(), 'digest-a')).toBe(false);
      });

      it('lets exactly one of many concurrent redemptions of one jti win', async () => {
        const jti = newJti();
        const results = await Promise.all(Array.from({ length: 40 }, () => ledger.redemptions.redeem(request(jti))));
        expect(results.filter((r) => r.status === 'redeemed')).toHaveLength(1);
        // The others are duplicates of a round still running (same answers, no outcome yet).
        expect(results.filter((r) => r.status === 'in_progress')).toHaveLength(39);
      });

      it('keeps jtis independent', async () => {
        const jtis = Array.from({ length: 50 }, newJti);
        const results = await Promise.all(jtis.map((jti) => ledger.redemptions.redeem(request(jti))));
        expect(results.every((r) => r.status === 'redeemed')).toBe(true);
      });
    });

    describe('tokens', () => {
      it('mints 128-bit base64url codes, all different', async () => {
        const codes = await Promise.all(
          Array.from({ length: 20 }, () =>
            ledger.redemptions.mintToken({ purpose: 'p', expiresAt: T0 + 1000, now: T0 }),
          ),
        );
        for (const code of codes) expect(code).toMatch(/^[A-Za-z0-9_-]{22}$/);
        expect(new Set(codes).size).toBe(codes.length);
      });

      it('redeems a token once, with its data, then reports already_used', async () => {
        const code = await ledger.redemptions.mintToken({
          purpose: 'approve',
          data: '{"id":42}',
          expiresAt: T0 + 1000,
          now: T0,
        });
        expect(await ledger.redemptions.redeemToken(code, 'approve', T0 + 1)).toEqual({
          status: 'redeemed',
          data: '{"id":42}',
        });
        expect(await ledger.redemptions.redeemToken(code, 'approve', T0 + 2)).toEqual({ status: 'already_used' });
      });

      it('returns undefined data when none was given, and keeps an empty string', async () => {
        const none = await ledger.redemptions.mintToken({ purpose: 'p', expiresAt: T0 + 1000, now: T0 });
        const empty = await ledger.redemptions.mintToken({ purpose: 'p', data: '', expiresAt: T0 + 1000, now: T0 });
        expect(await ledger.redemptions.redeemToken(none, 'p', T0)).toEqual({ status: 'redeemed', data: undefined });
        expect(await ledger.redemptions.redeemToken(empty, 'p', T0)).toEqual({ status: 'redeemed', data: '' });
      });

      it('reports unknown codes, including garbage and oversized ones', async () => {
        expect(await ledger.redemptions.redeemToken(randomBytes(16).toString('base64url'), 'p', T0)).toEqual({
          status: 'unknown',
        });
        expect(await ledger.redemptions.redeemToken('', 'p', T0)).toEqual({ status: 'unknown' });
        expect(await ledger.redemptions.redeemToken('x'.repeat(100_000), 'p', T0)).toEqual({ status: 'unknown' });
      });

      it('treats another purpose as unknown and does not consume the token', async () => {
        const code = await ledger.redemptions.mintToken({ purpose: 'approve', expiresAt: T0 + 1000, now: T0 });
        expect(await ledger.redemptions.redeemToken(code, 'deny', T0)).toEqual({ status: 'unknown' });
        expect(await ledger.redemptions.redeemToken(code, 'approve', T0)).toEqual({
          status: 'redeemed',
          data: undefined,
        });
      });

      it('reports expired tokens (a token stops at expiresAt)', async () => {
        const code = await ledger.redemptions.mintToken({ purpose: 'p', expiresAt: T0 + 1000, now: T0 });
        expect(await ledger.redemptions.redeemToken(code, 'p', T0 + 1000)).toEqual({ status: 'expired' });
        expect(await ledger.redemptions.redeemToken(code, 'p', T0 + 5000)).toEqual({ status: 'expired' });
        const fresh = await ledger.redemptions.mintToken({ purpose: 'p', expiresAt: T0 + 1000, now: T0 });
        expect(await ledger.redemptions.redeemToken(fresh, 'p', T0 + 999)).toEqual({
          status: 'redeemed',
          data: undefined,
        });
      });

      it('lets exactly one of many concurrent redemptions of one token win', async () => {
        const code = await ledger.redemptions.mintToken({ purpose: 'p', data: 'd', expiresAt: T0 + 1000, now: T0 });
        const results = await Promise.all(
          Array.from({ length: 40 }, () => ledger.redemptions.redeemToken(code, 'p', T0)),
        );
        expect(results.filter((r) => r.status === 'redeemed')).toHaveLength(1);
        expect(results.filter((r) => r.status === 'already_used')).toHaveLength(39);
      });
    });

    describe('parked requests', () => {
      it('creates a request at version 1 and reads back every field', async () => {
        const id = newId();
        const state = `${randomBytes(64 * 1024).toString('base64url')}ü€`;
        const request = parked(id, {
          state,
          waitingFor: [{ key: 'manager_approval', role: 'manager' }, { key: 'legal_review' }],
          now: T0 + 5,
        });
        expect(await ledger.requests.parkRequest(request, null)).toEqual({ status: 'parked', version: 1 });
        expect(await ledger.requests.getRequest(id)).toEqual({
          id,
          flow: 'expense_approval',
          requester: 'hash-alice',
          requesterName: null,
          status: 'waiting',
          waitingFor: [{ key: 'manager_approval', role: 'manager' }, { key: 'legal_review' }],
          state,
          version: 1,
          createdAt: T0 + 5,
          updatedAt: T0 + 5,
          expiresAt: T0 + 30 * DAY,
          dueAt: null,
        });
      });

      it('keeps the readable requester name only when given', async () => {
        const id = newId();
        await ledger.requests.parkRequest(parked(id, { requesterName: 'alice@example.com' }), null);
        expect((await ledger.requests.getRequest(id))?.requesterName).toBe('alice@example.com');
      });

      it('refuses to create an id that exists, and leaves the row as it was', async () => {
        const id = newId();
        await ledger.requests.parkRequest(parked(id), null);
        expect(await ledger.requests.parkRequest(parked(id, { state: 'other', now: T0 + 1 }), null)).toEqual({
          status: 'conflict',
        });
        expect(await ledger.requests.getRequest(id)).toMatchObject({
          state: 'sealed-state-1',
          version: 1,
          updatedAt: T0,
        });
      });

      it('rewrites a request only from the version it holds, bumping the version each time', async () => {
        const id = newId();
        await ledger.requests.parkRequest(parked(id), null);
        const next = parked(id, {
          status: 'completed',
          waitingFor: [],
          state: 'sealed-state-2',
          requesterName: 'alice',
          now: T0 + 1000,
          expiresAt: T0 + 60 * DAY,
        });
        expect(await ledger.requests.parkRequest(next, 1)).toEqual({ status: 'parked', version: 2 });
        expect(await ledger.requests.getRequest(id)).toEqual({
          id,
          flow: 'expense_approval',
          requester: 'hash-alice',
          requesterName: 'alice',
          status: 'completed',
          waitingFor: [],
          state: 'sealed-state-2',
          version: 2,
          createdAt: T0,
          updatedAt: T0 + 1000,
          expiresAt: T0 + 60 * DAY,
          dueAt: null,
        });
        // A writer that read version 1 lost: it must read again.
        expect(await ledger.requests.parkRequest(parked(id, { state: 'stale' }), 1)).toEqual({ status: 'conflict' });
        expect(await ledger.requests.parkRequest(parked(id, { state: 'ahead' }), 3)).toEqual({ status: 'conflict' });
        expect((await ledger.requests.getRequest(id))?.state).toBe('sealed-state-2');
        expect(await ledger.requests.parkRequest(parked(id, { state: 'sealed-state-3', now: T0 + 2000 }), 2)).toEqual({
          status: 'parked',
          version: 3,
        });
        expect(await ledger.requests.getRequest(id)).toMatchObject({
          state: 'sealed-state-3',
          version: 3,
          createdAt: T0,
        });
      });

      it('reports a conflict for an update of an id it does not hold, and creates nothing', async () => {
        const id = newId();
        expect(await ledger.requests.parkRequest(parked(id), 1)).toEqual({ status: 'conflict' });
        expect(await ledger.requests.parkRequest(parked(id), 0)).toEqual({ status: 'conflict' });
        expect(await ledger.requests.getRequest(id)).toBeUndefined();
      });

      it('lets exactly one of many concurrent writers from one version win', async () => {
        const id = newId();
        const creates = await Promise.all(
          Array.from({ length: 20 }, (_, i) => ledger.requests.parkRequest(parked(id, { state: `create-${i}` }), null)),
        );
        expect(creates.filter((r) => r.status === 'parked')).toEqual([{ status: 'parked', version: 1 }]);
        const winner = creates.findIndex((r) => r.status === 'parked');
        expect((await ledger.requests.getRequest(id))?.state).toBe(`create-${winner}`);

        const updates = await Promise.all(
          Array.from({ length: 20 }, (_, i) => ledger.requests.parkRequest(parked(id, { state: `update-${i}` }), 1)),
        );
        expect(updates.filter((r) => r.status === 'parked')).toEqual([{ status: 'parked', version: 2 }]);
        expect(updates.filter((r) => r.status === 'conflict')).toHaveLength(19);
        const updated = updates.findIndex((r) => r.status === 'parked');
        expect(await ledger.requests.getRequest(id)).toMatchObject({ state: `update-${updated}`, version: 2 });
      });

      it('answers undefined for an unknown id', async () => {
        expect(await ledger.requests.getRequest(newId())).toBeUndefined();
        expect(await ledger.requests.getRequest('')).toBeUndefined();
      });

      it("lists a requester's requests updated since a time, newest first, ties by id", async () => {
        const requester = newId('hash');
        const p = newId();
        await ledger.requests.parkRequest(parked(`${p}-1`, { requester, now: T0 + 10 }), null);
        await ledger.requests.parkRequest(parked(`${p}-3`, { requester, now: T0 + 30 }), null);
        await ledger.requests.parkRequest(parked(`${p}-2`, { requester, now: T0 + 20 }), null);
        // Same time: ordered by id in code-point order ("B" before "a"), whatever the insertion order.
        await ledger.requests.parkRequest(parked(`${p}-a`, { requester, now: T0 + 40 }), null);
        await ledger.requests.parkRequest(parked(`${p}-B`, { requester, now: T0 + 40 }), null);
        await ledger.requests.parkRequest(parked(newId(), { requester: newId('hash'), now: T0 + 50 }), null);

        const ids = async (since: number) => (await ledger.requests.listRequests(requester, since)).map((r) => r.id);
        expect(await ids(T0)).toEqual([`${p}-B`, `${p}-a`, `${p}-3`, `${p}-2`, `${p}-1`]);
        expect(await ids(T0 + 20)).toEqual([`${p}-B`, `${p}-a`, `${p}-3`, `${p}-2`]); // since is inclusive
        expect(await ids(T0 + 41)).toEqual([]);

        // A rewrite moves a request to the top.
        await ledger.requests.parkRequest(parked(`${p}-1`, { requester, status: 'completed', now: T0 + 100 }), 1);
        expect(await ids(T0 + 30)).toEqual([`${p}-1`, `${p}-B`, `${p}-a`, `${p}-3`]);
        expect((await ledger.requests.listRequests(requester, T0 + 100))[0]).toMatchObject({
          id: `${p}-1`,
          status: 'completed',
          version: 2,
        });
        expect(await ledger.requests.listRequests(newId('hash'), 0)).toEqual([]);
      });

      it('lists runs for operators by flow, status, requester and time, paged by keyset, ties by id', async () => {
        const flow = newId('flow');
        const p = newId();
        const at = (id: string, now: number, fields: Partial<ParkRequest> = {}) =>
          ledger.requests.parkRequest(parked(`${p}-${id}`, { flow, now, ...fields }), null);
        await at('1', T0 + 10, { requester: 'hash-carol', requesterName: 'carol' });
        await at('a', T0 + 40, { status: 'terminated', waitingFor: [] });
        await at('B', T0 + 40);
        await at('2', T0 + 20);
        await ledger.requests.parkRequest(parked(newId(), { now: T0 + 50 }), null); // another flow
        expect(ledger.runs.listRuns).toBeDefined();
        const ids = async (filter: Partial<RunFilter>) =>
          (await ledger.runs.listRuns({ flow, limit: 10, ...filter })).map((r) => r.id.slice(p.length + 1));
        expect(await ids({})).toEqual(['B', 'a', '2', '1']);
        expect(await ids({ status: 'terminated' })).toEqual(['a']);
        expect(await ids({ requester: 'carol' })).toEqual(['1']);
        expect(await ids({ requester: 'hash-carol' })).toEqual(['1']);
        expect(await ids({ updatedSince: T0 + 20 })).toEqual(['B', 'a', '2']);
        expect(await ids({ createdSince: T0 + 40 })).toEqual(['B', 'a']);
        const first = await ledger.runs.listRuns({ flow, limit: 1 });
        expect(await ids({ limit: 2, after: { updatedAt: first[0]!.updatedAt, id: first[0]!.id } })).toEqual([
          'a',
          '2',
        ]);
        expect(await ids({ after: { updatedAt: T0 + 40, id: `${p}-a` } })).toEqual(['2', '1']);
        expect((await ledger.runs.listRuns({ flow, limit: 10 }))[1]).toMatchObject({
          status: 'terminated',
          version: 1,
        });
      });
    });

    describe('decisions', () => {
      const pendingFor = (roles: string[], excludeRequester = 'hash-bob', now = T0) => ({
        pendingFor: { roles, excludeRequester, now },
      });
      /** Only this test's rows: other tests' decisions with a null role are pending for anyone. */
      const only = (ids: string[], list: { id: string; key: string }[]) =>
        list.filter((d) => ids.includes(d.id)).map((d) => `${d.id}/${d.key}`);

      it('stores requested decisions as pending, every field intact', async () => {
        const id = newId();
        await requestDecisions([
          decisionRequest(id, 'manager_approval'),
          decisionRequest(id, 'legal', { role: null, deadline: null, message: 'Legal? ✓', requestedAt: T0 + 1 }),
        ]);
        expect(await ledger.decisions.listDecisions({ id })).toEqual([
          {
            ...decisionRequest(id, 'manager_approval'),
            status: 'pending',
            decider: null,
            deciderName: null,
            content: null,
            decidedAt: null,
            ...NOT_DELEGATED,
          },
          {
            ...decisionRequest(id, 'legal', { role: null, deadline: null, message: 'Legal? ✓', requestedAt: T0 + 1 }),
            status: 'pending',
            decider: null,
            deciderName: null,
            content: null,
            decidedAt: null,
            ...NOT_DELEGATED,
          },
        ]);
      });

      it('leaves a decision that exists as it is when requested again, and inserts the new ones', async () => {
        const id = newId();
        await requestDecisions([decisionRequest(id, 'manager_approval')]);
        expect(
          await recordDecision({ id, key: 'manager_approval', decider: 'bob', content: '{}', now: T0 + 1 }),
        ).toEqual({ status: 'recorded', version: 2 });
        await requestDecisions([
          decisionRequest(id, 'manager_approval', { message: 'changed', requestedAt: T0 + 5 }),
          decisionRequest(id, 'finance_approval', { role: 'finance', requestedAt: T0 + 5 }),
        ]);
        await ledger.decisions.requestDecisions([]);
        const rows = await ledger.decisions.listDecisions({ id });
        expect(rows.map((d) => [d.key, d.status, d.message, d.decider])).toEqual([
          ['manager_approval', 'decided', 'Approve 120 EUR for travel?', 'bob'],
          ['finance_approval', 'pending', 'Approve 120 EUR for travel?', null],
        ]);
      });

      it('inserts many decisions in one call', async () => {
        const id = newId();
        const keys = Array.from({ length: 450 }, (_, i) => `k${String(i).padStart(3, '0')}`);
        await requestDecisions(keys.map((key) => decisionRequest(id, key)));
        await requestDecisions(keys.map((key) => decisionRequest(id, key)));
        expect((await ledger.decisions.listDecisions({ id })).map((d) => d.key)).toEqual(keys);
      });

      it('lists a request’s decisions in any status, by request time then key in code-point order', async () => {
        const id = newId();
        await requestDecisions([
          decisionRequest(id, 'late', { requestedAt: T0 + 10 }),
          decisionRequest(id, 'alpha'),
          decisionRequest(id, 'Zeta'),
          decisionRequest(id, 'beta'),
        ]);
        await recordDecision({ id, key: 'beta', decider: 'bob', content: 'yes', now: T0 + 1 });
        await requestDecisions([decisionRequest(newId(), 'alpha')]);
        expect((await ledger.decisions.listDecisions({ id })).map((d) => [d.key, d.status])).toEqual([
          ['Zeta', 'pending'],
          ['alpha', 'pending'],
          ['beta', 'decided'],
          ['late', 'pending'],
        ]);
        await ledger.decisions.closeDecisions(id, T0 + 2);
        expect((await ledger.decisions.listDecisions({ id })).map((d) => d.status)).toEqual([
          'closed',
          'closed',
          'decided',
          'closed',
        ]);
        expect(await ledger.decisions.listDecisions({ id: newId() })).toEqual([]);
      });

      it('lists pending decisions for a decider: their roles or no role, not their own, not past the deadline', async () => {
        const manager = newId('role');
        const finance = newId('role');
        const [a, b, c, d, e, f] = Array.from({ length: 6 }, () => newId());
        const ids = [a!, b!, c!, d!, e!, f!];
        await requestDecisions([
          decisionRequest(a!, 'manager_approval', { role: manager, requestedAt: T0 + 1 }),
          decisionRequest(b!, 'finance_approval', { role: finance, requestedAt: T0 + 2 }),
          decisionRequest(c!, 'anyone', { role: null, requestedAt: T0 + 3 }),
          decisionRequest(d!, 'manager_approval', { role: manager, requester: 'hash-bob', requestedAt: T0 + 4 }),
          decisionRequest(e!, 'manager_approval', { role: manager, deadline: T0 + 100, requestedAt: T0 + 5 }),
          decisionRequest(f!, 'manager_approval', { role: manager, deadline: null, requestedAt: T0 + 6 }),
        ]);
        const list = async (roles: string[], now = T0, exclude = 'hash-bob') =>
          only(ids, await ledger.decisions.listDecisions(pendingFor(roles, exclude, now)));

        expect(await list([manager])).toEqual([
          `${a}/manager_approval`,
          `${c}/anyone`,
          `${e}/manager_approval`,
          `${f}/manager_approval`,
        ]);
        expect(await list([finance, manager])).toEqual([
          `${a}/manager_approval`,
          `${b}/finance_approval`,
          `${c}/anyone`,
          `${e}/manager_approval`,
          `${f}/manager_approval`,
        ]);
        // No matching role: only decisions open to anyone the flow's predicate allows.
        expect(await list([])).toEqual([`${c}/anyone`]);
        expect(await list([newId('role')])).toEqual([`${c}/anyone`]);
        // Someone else as the caller: bob's own request is listed, alice's are not.
        expect(await list([manager], T0, 'hash-alice')).toEqual([`${d}/manager_approval`]);
        // The deadline: listed up to the millisecond before it, not at it.
        expect(await list([manager], T0 + 99)).toContain(`${e}/manager_approval`);
        expect(await list([manager], T0 + 100)).not.toContain(`${e}/manager_approval`);
        // Those due at T0 + HOUR are gone then; the one without a deadline stays.
        expect(await list([manager], T0 + HOUR)).toEqual([`${f}/manager_approval`]);
        expect(await list([manager], T0 + HOUR - 1)).toEqual([
          `${a}/manager_approval`,
          `${c}/anyone`,
          `${f}/manager_approval`,
        ]);

        // Decided and closed decisions are no longer pending for anyone.
        await recordDecision({ id: a!, key: 'manager_approval', decider: 'carol', content: 'ok', now: T0 + 7 });
        await ledger.decisions.closeDecisions(c!, T0 + 7);
        expect(await list([manager])).toEqual([`${e}/manager_approval`, `${f}/manager_approval`]);
        // Both filters at once.
        expect(only(ids, await ledger.decisions.listDecisions({ id: f!, ...pendingFor([manager]) }))).toEqual([
          `${f}/manager_approval`,
        ]);
        expect(only(ids, await ledger.decisions.listDecisions({ id: a!, ...pendingFor([manager]) }))).toEqual([]);
      });

      it('records a decision once: the decider, the content and the time; then already_decided', async () => {
        const id = newId();
        await requestDecisions([decisionRequest(id, 'manager_approval')]);
        const content = '{"approve":true,"comment":"ok ✓"}';
        expect(await recordDecision({ id, key: 'manager_approval', decider: 'bob', content, now: T0 + 7 })).toEqual({
          status: 'recorded',
          version: 2,
        });
        expect(
          await recordDecision({ id, key: 'manager_approval', decider: 'carol', content: 'no', now: T0 + 8 }),
        ).toEqual({ status: 'already_decided' });
        // Still already_decided after its deadline: it was decided in time.
        expect(
          await recordDecision({ id, key: 'manager_approval', decider: 'carol', content: 'no', now: T0 + DAY }),
        ).toEqual({ status: 'already_decided' });
        expect(await ledger.decisions.listDecisions({ id })).toEqual([
          {
            ...decisionRequest(id, 'manager_approval'),
            status: 'decided',
            decider: 'bob',
            deciderName: null,
            content,
            decidedAt: T0 + 7,
            ...NOT_DELEGATED,
          },
        ]);
      });

      it('records the readable decider only when given one (names stored), beside the hash', async () => {
        const id = newId();
        await requestDecisions([decisionRequest(id, 'a'), decisionRequest(id, 'b')]);
        await recordDecision({ id, key: 'a', decider: 'h-bob', deciderName: 'bob', content: 'c', now: T0 + 1 });
        await recordDecision({ id, key: 'b', decider: 'h-carol', deciderName: null, content: 'c', now: T0 + 1 });
        expect((await ledger.decisions.listDecisions({ id })).map((d) => [d.key, d.decider, d.deciderName])).toEqual([
          ['a', 'h-bob', 'bob'],
          ['b', 'h-carol', null],
        ]);
      });

      it('refuses a decision at and after its deadline, and records one the millisecond before', async () => {
        const late = newId();
        const inTime = newId();
        await requestDecisions([decisionRequest(late, 'm'), decisionRequest(inTime, 'm')]);
        const record = (id: string, now: number) => recordDecision({ id, key: 'm', decider: 'bob', content: 'c', now });
        expect(await record(late, T0 + HOUR)).toEqual({ status: 'expired' });
        expect(await record(late, T0 + 2 * HOUR)).toEqual({ status: 'expired' });
        expect(await record(inTime, T0 + HOUR - 1)).toEqual({ status: 'recorded', version: 2 });
        expect((await ledger.decisions.listDecisions({ id: late }))[0]).toMatchObject({
          status: 'pending',
          decider: null,
        });
        // Closing wins over expiry: the request ended.
        await ledger.decisions.closeDecisions(late, T0 + 2 * HOUR);
        expect(await record(late, T0 + 2 * HOUR)).toEqual({ status: 'closed' });
      });

      it('reports unknown decisions and closed ones', async () => {
        const id = newId();
        await requestDecisions([decisionRequest(id, 'manager_approval', { deadline: null })]);
        const record = (rid: string, key: string) =>
          recordDecision({ id: rid, key, decider: 'bob', content: 'c', now: T0 + 10 * 365 * DAY });
        expect(await record(newId(), 'manager_approval')).toEqual({ status: 'unknown' });
        expect(await record(id, 'finance_approval')).toEqual({ status: 'unknown' });
        expect(await record(id, 'MANAGER_APPROVAL')).toEqual({ status: 'unknown' });
        expect(await ledger.decisions.closeDecisions(id, T0 + 1)).toBe(1);
        expect(await record(id, 'manager_approval')).toEqual({ status: 'closed' });
        expect((await ledger.decisions.listDecisions({ id }))[0]).toMatchObject({
          status: 'closed',
          decider: null,
          content: null,
        });
      });

      it('records exactly one of many concurrent decisions, and keeps the winner’s answer', async () => {
        const id = newId();
        await requestDecisions([decisionRequest(id, 'manager_approval')]);
        const results = await Promise.all(
          Array.from({ length: 30 }, (_, i) =>
            recordDecision({ id, key: 'manager_approval', decider: `d${i}`, content: `c${i}`, now: T0 + i }),
          ),
        );
        expect(results.filter((r) => r.status === 'recorded')).toHaveLength(1);
        expect(results.filter((r) => r.status === 'already_decided')).toHaveLength(29);
        const winner = results.findIndex((r) => r.status === 'recorded');
        expect((await ledger.decisions.listDecisions({ id }))[0]).toMatchObject({
          decider: `d${winner}`,
          content: `c${winner}`,
          decidedAt: T0 + winner,
        });
      });

      it('records a decision only at its request’s version, bumps that version, and so fails a stale writer', async () => {
        const id = newId();
        await requestDecisions([decisionRequest(id, 'manager_approval'), decisionRequest(id, 'legal')]);
        const decide = (key: string, expectedVersion: number, now = T0 + 5) =>
          ledger.decisions.recordDecision({ id, key, decider: 'bob', content: 'c', now, expectedVersion });
        expect(await decide('manager_approval', 2)).toEqual({ status: 'conflict' });
        expect(await decide('manager_approval', 0)).toEqual({ status: 'conflict' });
        expect((await ledger.decisions.listDecisions({ id }))[0]).toMatchObject({ status: 'pending', decider: null });
        expect(await decide('manager_approval', 1)).toEqual({ status: 'recorded', version: 2 });
        expect(await ledger.requests.getRequest(id)).toMatchObject({
          version: 2,
          updatedAt: T0 + 5,
          status: 'waiting',
          state: 'sealed-state-1',
        });
        // A writer that read version 1 (a withdrawal, say) lost: its compare-and-set fails.
        expect(await ledger.requests.parkRequest(parked(id, { status: 'withdrawn', now: T0 + 6 }), 1)).toEqual({
          status: 'conflict',
        });
        // Another key from the old version conflicts; from the new one it is recorded.
        expect(await decide('legal', 1)).toEqual({ status: 'conflict' });
        expect(await decide('legal', 2, T0 + 7)).toEqual({ status: 'recorded', version: 3 });
        // Decided (even when asked from a stale version) wins over a conflict.
        expect(await decide('manager_approval', 1)).toEqual({ status: 'already_decided' });
        expect(await decide('manager_approval', 3)).toEqual({ status: 'already_decided' });
      });

      it('refuses a decision once its request ended, before its decisions are closed, and past its deadline', async () => {
        const id = newId();
        await requestDecisions([decisionRequest(id, 'manager_approval')]);
        expect(
          await ledger.requests.parkRequest(parked(id, { status: 'withdrawn', waitingFor: [], now: T0 + 1 }), 1),
        ).toEqual({
          status: 'parked',
          version: 2,
        });
        for (const expectedVersion of [1, 2, 3]) {
          expect(
            await ledger.decisions.recordDecision({
              id,
              key: 'manager_approval',
              decider: 'bob',
              content: 'c',
              now: T0 + 2,
              expectedVersion,
            }),
          ).toEqual({ status: 'closed' });
        }
        expect((await ledger.decisions.listDecisions({ id }))[0]).toMatchObject({ status: 'pending', decider: null });
        expect((await ledger.requests.getRequest(id))?.version).toBe(2);
        // Past its deadline, from a stale version: expired (no retry would help).
        const late = newId();
        await requestDecisions([decisionRequest(late, 'manager_approval')]);
        await ledger.requests.parkRequest(parked(late, { now: T0 + 1 }), 1);
        expect(
          await ledger.decisions.recordDecision({
            id: late,
            key: 'manager_approval',
            decider: 'bob',
            content: 'c',
            now: T0 + HOUR,
            expectedVersion: 1,
          }),
        ).toEqual({ status: 'expired' });
        // A decision whose request is gone (pruned) or was never parked is unknown.
        const orphan = newId();
        await ledger.decisions.requestDecisions([decisionRequest(orphan, 'manager_approval')]);
        expect(
          await ledger.decisions.recordDecision({
            id: orphan,
            key: 'manager_approval',
            decider: 'bob',
            content: 'c',
            now: T0 + 1,
            expectedVersion: 1,
          }),
        ).toEqual({ status: 'unknown' });
      });

      it('of a withdrawal and a decision racing from one version, exactly one wins, every time', async () => {
        const wins = { decision: 0, withdrawal: 0 };
        for (let i = 0; i < 24; i++) {
          const id = newId();
          await requestDecisions([decisionRequest(id, 'manager_approval')]);
          const withdrawal = () =>
            ledger.requests.parkRequest(
              parked(id, { status: 'withdrawn', waitingFor: [], state: 'withdrawn', now: T0 + 1 }),
              1,
            );
          const decision = () =>
            ledger.decisions.recordDecision({
              id,
              key: 'manager_approval',
              decider: 'bob',
              content: 'c',
              now: T0 + 1,
              expectedVersion: 1,
            });
          const [parkedResult, decided] =
            i % 2 === 0
              ? await Promise.all([withdrawal(), decision()])
              : await Promise.all([decision(), withdrawal()]).then(([d, w]) => [w, d] as const);
          const row = await ledger.requests.getRequest(id);
          const [record] = await ledger.decisions.listDecisions({ id });
          expect(row?.version).toBe(2);
          if (parkedResult.status === 'parked') {
            wins.withdrawal++;
            expect(decided).toEqual({ status: 'closed' });
            expect({ status: row?.status, decision: record?.status }).toEqual({
              status: 'withdrawn',
              decision: 'pending',
            });
          } else {
            wins.decision++;
            expect(decided).toEqual({ status: 'recorded', version: 2 });
            expect({ status: row?.status, decision: record?.status }).toEqual({
              status: 'waiting',
              decision: 'decided',
            });
          }
        }
        expect(wins.decision + wins.withdrawal).toBe(24);
      });

      it('closes only the pending decisions of one request, and says how many', async () => {
        const id = newId();
        const other = newId();
        await requestDecisions([
          decisionRequest(id, 'a'),
          decisionRequest(id, 'b'),
          decisionRequest(id, 'c'),
          decisionRequest(other, 'a'),
        ]);
        await recordDecision({ id, key: 'b', decider: 'bob', content: 'yes', now: T0 + 1 });
        expect(await ledger.decisions.closeDecisions(id, T0 + 2)).toBe(2);
        expect(await ledger.decisions.closeDecisions(id, T0 + 3)).toBe(0);
        expect(await ledger.decisions.closeDecisions(newId(), T0 + 3)).toBe(0);
        expect((await ledger.decisions.listDecisions({ id })).map((d) => [d.key, d.status, d.decider])).toEqual([
          ['a', 'closed', null],
          ['b', 'decided', 'bob'],
          ['c', 'closed', null],
        ]);
        expect((await ledger.decisions.listDecisions({ id: other }))[0]?.status).toBe('pending');
      });
    });

    describe('durable steps', () => {
      const claim = (
        id: string,
        owner: string,
        fields: Partial<Parameters<FullLedger['steps']['claimStep']>[0]> = {},
      ) => ({
        id,
        key: 'refund#0',
        owner,
        leaseUntil: T0 + 60_000,
        now: T0,
        expiresAt: T0 + DAY,
        ...fields,
      });

      it("lists one instance's steps by key, recorded or running", async () => {
        const id = newId('F');
        await ledger.steps.claimStep(claim(id, 'a', { key: 'ship#0' }));
        await ledger.steps.claimStep(claim(id, 'a'));
        await ledger.steps.claimStep(claim(newId('F'), 'a'));
        await ledger.steps.recordStep({ id, key: 'refund#0', status: 'failed', outcome: 'sealed-error', now: T0 + 5 });
        expect(ledger.runs.listSteps).toBeDefined();
        const steps = await ledger.runs.listSteps(id);
        expect(steps.map((s) => [s.key, s.status, s.recordedAt])).toEqual([
          ['refund#0', 'failed', T0 + 5],
          ['ship#0', 'running', null],
        ]);
        expect(await ledger.runs.listSteps(newId('F'))).toEqual([]);
      });

      it('claims once: another owner is told it is held until the lease ends', async () => {
        const id = newId('F');
        expect(await ledger.steps.claimStep(claim(id, 'a'))).toEqual({ status: 'claimed', claims: 1 });
        expect(await ledger.steps.claimStep(claim(id, 'b'))).toEqual({
          status: 'held',
          owner: 'a',
          leaseUntil: T0 + 60_000,
        });
        expect(await ledger.steps.claimStep(claim(id, 'b', { now: T0 + 59_999 }))).toMatchObject({ status: 'held' });
        // Its owner renews the lease (not a new claim).
        expect(await ledger.steps.claimStep(claim(id, 'a', { leaseUntil: T0 + 120_000, now: T0 + 50_000 }))).toEqual({
          status: 'claimed',
          claims: 1,
        });
        expect(await ledger.steps.claimStep(claim(id, 'b', { now: T0 + 60_000 }))).toMatchObject({ status: 'held' });
        // Once the lease ended, another owner takes it over.
        expect(await ledger.steps.claimStep(claim(id, 'b', { now: T0 + 120_000, leaseUntil: T0 + 180_000 }))).toEqual({
          status: 'claimed',
          claims: 2,
        });
        expect(await ledger.steps.getStep(id, 'refund#0')).toEqual({
          id,
          key: 'refund#0',
          status: 'running',
          owner: 'b',
          leaseUntil: T0 + 180_000,
          claims: 2,
          outcome: null,
          recordedAt: null,
          expiresAt: T0 + DAY,
        });
      });

      it('records once; a recorded step is handed back to every claimer', async () => {
        const id = newId('F');
        expect(
          await ledger.steps.recordStep({ id, key: 'refund#0', status: 'succeeded', outcome: 'x', now: T0 }),
        ).toEqual({
          status: 'unknown',
        });
        await ledger.steps.claimStep(claim(id, 'a'));
        expect(
          await ledger.steps.recordStep({ id, key: 'refund#0', status: 'succeeded', outcome: 'sealed-1', now: T0 + 5 }),
        ).toEqual({ status: 'recorded' });
        const second = await ledger.steps.recordStep({
          id,
          key: 'refund#0',
          status: 'failed',
          outcome: 'sealed-2',
          now: T0 + 6,
        });
        expect(second).toMatchObject({
          status: 'already_recorded',
          record: { status: 'succeeded', outcome: 'sealed-1' },
        });
        const record = {
          id,
          key: 'refund#0',
          status: 'succeeded',
          owner: 'a',
          leaseUntil: T0 + 60_000,
          claims: 1,
          outcome: 'sealed-1',
          recordedAt: T0 + 5,
          expiresAt: T0 + DAY,
        };
        expect(await ledger.steps.claimStep(claim(id, 'b', { now: T0 + DAY - 1 }))).toEqual({
          status: 'recorded',
          record,
        });
        expect(await ledger.steps.claimStep(claim(id, 'a'))).toEqual({ status: 'recorded', record });
        expect(await ledger.steps.getStep(id, 'refund#0')).toEqual(record);
        expect(await ledger.steps.getStep(id, 'refund#1')).toBeUndefined();
      });

      it('a step that outlived its lease and finishes first still records; the new owner gets its record', async () => {
        const id = newId('F');
        await ledger.steps.claimStep(claim(id, 'a'));
        await ledger.steps.claimStep(claim(id, 'b', { now: T0 + 60_000 }));
        expect(
          await ledger.steps.recordStep({ id, key: 'refund#0', status: 'failed', outcome: 'late-a', now: T0 }),
        ).toEqual({
          status: 'recorded',
        });
        expect(
          await ledger.steps.recordStep({ id, key: 'refund#0', status: 'succeeded', outcome: 'b', now: T0 + 1 }),
        ).toMatchObject({ status: 'already_recorded', record: { status: 'failed', outcome: 'late-a', owner: 'b' } });
      });

      it('reopens a failed step once (an operator retry): the next claim takes it over and runs it again', async () => {
        const id = newId('F');
        expect(ledger.steps.reopenStep).toBeDefined();
        expect(await ledger.steps.reopenStep(id, 'refund#0', T0)).toBe(false); // unknown
        await ledger.steps.claimStep(claim(id, 'a'));
        expect(await ledger.steps.reopenStep(id, 'refund#0', T0)).toBe(false); // running
        await ledger.steps.recordStep({ id, key: 'refund#0', status: 'failed', outcome: 'sealed-error', now: T0 + 5 });
        const [first, second] = await Promise.all([
          ledger.steps.reopenStep(id, 'refund#0', T0 + 10),
          ledger.steps.reopenStep(id, 'refund#0', T0 + 10),
        ]);
        expect([first, second].sort()).toEqual([false, true]);
        expect(await ledger.steps.getStep(id, 'refund#0')).toMatchObject({
          status: 'running',
          outcome: null,
          recordedAt: null,
          leaseUntil: 0,
          claims: 1,
        });
        // Its former owner or any other takes it at once, as a new owner.
        expect(await ledger.steps.claimStep(claim(id, 'b', { now: T0 + 11 }))).toEqual({
          status: 'claimed',
          claims: 2,
        });
        expect(
          await ledger.steps.recordStep({ id, key: 'refund#0', status: 'succeeded', outcome: 'ok', now: T0 + 12 }),
        ).toEqual({
          status: 'recorded',
        });
        expect(await ledger.steps.reopenStep(id, 'refund#0', T0 + 13)).toBe(false); // succeeded
      });
    });

    describe('prune', () => {
      it('deletes rows that expired before now, and only those', async () => {
        // Far in the future of every other test's rows, so earlier tests do not interfere.
        const base = T0 + 10 * 365 * 24 * 3600_000;
        await ledger.prune(base); // clear everything the earlier tests left behind
        const old = newJti();
        const edge = newJti();
        const live = newJti();
        await ledger.redemptions.redeem(request(old, 'd', base + 100, base));
        await ledger.redemptions.redeem(request(edge, 'd', base + 200, base));
        await ledger.redemptions.redeem(request(live, 'd', base + 10_000, base));
        await ledger.redemptions.recordOutcome(live, 'sealed');
        const oldToken = await ledger.redemptions.mintToken({ purpose: 'p', expiresAt: base + 100, now: base });
        const liveToken = await ledger.redemptions.mintToken({ purpose: 'p', expiresAt: base + 10_000, now: base });
        const stepOf = newId('F');
        const step = (key: string, expiresAt: number) =>
          ledger.steps.claimStep({ id: stepOf, key, owner: 'o', leaseUntil: base, now: base, expiresAt });
        await step('old#0', base + 100);
        await step('live#0', base + 10_000);

        expect(await ledger.prune(base + 200)).toBe(3); // `old`, `oldToken` and step `old#0`; `edge` expires at now, kept
        expect(await ledger.steps.getStep(stepOf, 'old#0')).toBeUndefined();
        expect(await ledger.steps.getStep(stepOf, 'live#0')).toMatchObject({ status: 'running' });
        expect(await ledger.prune(base + 200)).toBe(0);
        expect(await ledger.redemptions.redeem(request(live, 'd', base + 10_000, base + 300))).toEqual({
          status: 'retry',
          outcome: 'sealed',
        });
        expect(await ledger.redemptions.redeemToken(liveToken, 'p', base + 300)).toEqual({
          status: 'redeemed',
          data: undefined,
        });
        expect(await ledger.redemptions.redeemToken(oldToken, 'p', base + 300)).toEqual({ status: 'unknown' });
        // A pruned jti is still refused: its envelope has expired.
        expect(await ledger.redemptions.redeem(request(old, 'd', base + 100, base + 300))).toEqual({
          status: 'replayed',
        });
        expect(await ledger.prune(base + 20_000)).toBe(4); // edge, live, liveToken (used tokens go when they expire), live#0
      });

      it('deletes requests that expired before now together with their decisions, and only those', async () => {
        const base = T0 + 20 * 365 * DAY;
        await ledger.prune(base); // clear everything the earlier tests left behind
        const [old, edge, live] = [newId(), newId(), newId()];
        await ledger.requests.parkRequest(parked(old, { now: base, expiresAt: base + 100 }), null);
        await ledger.requests.parkRequest(parked(edge, { now: base, expiresAt: base + 200 }), null);
        await ledger.requests.parkRequest(parked(live, { now: base, expiresAt: base + 10_000 }), null);
        await requestDecisions([
          decisionRequest(old, 'manager_approval', { requestedAt: base, deadline: null }),
          decisionRequest(old, 'finance_approval', { requestedAt: base, deadline: null }),
          decisionRequest(edge, 'manager_approval', { requestedAt: base, deadline: null }),
          decisionRequest(live, 'manager_approval', { requestedAt: base, deadline: null }),
        ]);
        await recordDecision({ id: old, key: 'finance_approval', decider: 'bob', content: 'c', now: base });

        expect(await ledger.prune(base + 200)).toBe(3); // `old` and its two decisions; `edge` expires at now, kept
        expect(await ledger.prune(base + 200)).toBe(0);
        expect(await ledger.requests.getRequest(old)).toBeUndefined();
        expect(await ledger.decisions.listDecisions({ id: old })).toEqual([]);
        expect(
          await recordDecision({ id: old, key: 'manager_approval', decider: 'bob', content: 'c', now: base }),
        ).toEqual({ status: 'unknown' });
        // A pruned id can be parked afresh (the engine never reuses one; the ledger does not remember it).
        expect((await ledger.requests.getRequest(edge))?.version).toBe(1);
        expect((await ledger.decisions.listDecisions({ id: edge })).map((d) => d.key)).toEqual(['manager_approval']);
        expect(
          await ledger.requests.parkRequest(parked(live, { now: base + 300, expiresAt: base + 20_000 }), 1),
        ).toEqual({
          status: 'parked',
          version: 2,
        });
        expect(await ledger.prune(base + 10_001)).toBe(2); // edge and its decision; live was extended
        expect(await ledger.prune(base + 20_001)).toBe(2); // live and its decision
        expect(await ledger.requests.listRequests('hash-alice', base)).toEqual([]);
      });

      it('prunes many expired requests in batches', async () => {
        const base = T0 + 30 * 365 * DAY;
        await ledger.prune(base);
        const ids = Array.from({ length: 1200 }, () => newId());
        for (let i = 0; i < ids.length; i += 100) {
          await Promise.all(
            ids
              .slice(i, i + 100)
              .map((id) => ledger.requests.parkRequest(parked(id, { now: base, expiresAt: base + 1 }), null)),
          );
        }
        await ledger.decisions.requestDecisions(ids.map((id) => decisionRequest(id, 'm', { requestedAt: base })));
        expect(await ledger.prune(base + 2)).toBe(2 * ids.length);
        expect(await ledger.requests.getRequest(ids[0]!)).toBeUndefined();
        expect(await ledger.requests.getRequest(ids.at(-1)!)).toBeUndefined();
      });
    });

    describe('close', () => {
      it('refuses work after close, and closing twice is fine', async () => {
        const other = await open();
        await other.close();
        await other.close();
        await expect(other.redemptions.redeem(request(newJti()))).rejects.toThrow(/closed/);
        await expect(other.redemptions.mintToken({ purpose: 'p', expiresAt: T0 + 1, now: T0 })).rejects.toThrow(
          /closed/,
        );
        await expect(other.requests.parkRequest(parked(newId()), null)).rejects.toThrow(/closed/);
        await expect(other.requests.getRequest('x')).rejects.toThrow(/closed/);
        await expect(other.decisions.listDecisions({ id: 'x' })).rejects.toThrow(/closed/);
        await expect(
          other.decisions.recordDecision({
            id: 'x',
            key: 'k',
            decider: 'bob',
            content: 'c',
            now: T0,
            expectedVersion: 1,
          }),
        ).rejects.toThrow(/closed/);
      });
    });
  });
}
