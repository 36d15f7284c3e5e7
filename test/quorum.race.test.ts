/**
 * A quorum of two with three approvers racing (issue 27 item 7): three
 * runners, as three `baton serve` instances sharing keys and one ledger (each
 * its own connection: a real SQLite file, then the PostgreSQL the suite
 * starts), and three board members answering the same request at once
 * (`Promise.all`), each on another instance, through the one-shot decision
 * entry the HTTP API and the page use and through `baton_decide`. Every race
 * records exactly two approvals (the third is refused, saying why), the
 * decision is decided by one of the two, the flow advances once (one audited
 * round delivers the decision, with both votes; one `decision.made` in the
 * outbox) and its result names both approvers.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type AuditLog,
  createRequestStateCodec,
  createRunner,
  type DecisionCaller,
  type FullLedger,
  generateKey,
} from '@baton/engine';
import { createMemoryAuditLog } from '@baton/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boardSpend } from './fixtures/quorum-flows/index.js';
import { sharedLedgerKinds } from './helpers/e2eLedgers.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-quorum-race-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const keys = [generateKey()];
const members: DecisionCaller[] = ['bob', 'dave', 'erin'].map((principal) => ({ principal, roles: ['board'] }));
const RACES = 8;

const kinds = sharedLedgerKinds(dir);

describe.each(kinds)('three approvers racing a quorum of two over one %s', (_name, make) => {
  let ledgers: FullLedger[] = [];
  let drop: () => Promise<void> = async () => {};
  let runners: ReturnType<typeof createRunner>[] = [];
  let audit: AuditLog & ReturnType<typeof createMemoryAuditLog>;

  beforeAll(async () => {
    if (!make) return;
    const made = await make();
    drop = made.drop;
    ledgers = [await made.open(), await made.open(), await made.open()];
    audit = createMemoryAuditLog();
    runners = ledgers.map((ledger) =>
      createRunner({
        flows: [boardSpend],
        codec: createRequestStateCodec({ keys }),
        ledger,
        audit,
        outbox: true,
        holdMs: 5,
        pollMs: 1,
        waitInCallSeconds: 0,
      }),
    );
  });
  afterAll(async () => {
    for (const ledger of ledgers) await ledger.close();
    await drop();
  });

  it.skipIf(!make)('records exactly two approvals and advances the flow once, every time', async () => {
    const ledger = ledgers[0]!;
    for (let race = 0; race < RACES; race++) {
      const amount = 100 + race;
      const started = await runners[race % 3]!.run({
        flow: 'board_spend',
        args: { amount },
        context: { principal: 'alice', method: 'tools/call', target: 'board_spend' },
      });
      const id = started.fid;
      // Every other race, one of the three answers through baton_decide's two rounds.
      const viaTool = race % 2 === 1;
      const asked = viaTool ? await runners[2]!.decide({ id, context: members[2]! }) : undefined;
      const answers = await Promise.all(
        members.map(async (member, i) => {
          if (viaTool && i === 2 && asked?.type === 'input_required') {
            const outcome = await runners[i]!.decide({
              id,
              context: member,
              requestState: asked.requestState,
              inputResponses: { decision: { action: 'accept', content: { approve: true } } },
            });
            return outcome.type === 'complete'
              ? 'recorded'
              : `refused: ${outcome.type === 'error' ? outcome.message : ''}`;
          }
          const result = await runners[i]!.answerDecision({
            id,
            context: member,
            answer: { action: 'accept', content: { approve: true } },
            channel: i === 0 ? 'page' : 'api',
          });
          return result.status === 'recorded'
            ? 'recorded'
            : `refused: ${result.status === 'refused' ? result.reason : result.status}`;
        }),
      );
      // Two recorded, one refused (it lost: decided first, or the request ended first).
      expect(
        answers.filter((a) => a === 'recorded'),
        `race ${race}: ${answers.join(' | ')}`,
      ).toHaveLength(2);
      expect(answers.filter((a) => a.startsWith('refused'))).toHaveLength(1);

      // The ledger: exactly two votes, by two distinct members, and the decision decided by one of them.
      const votes = await ledger.decisions.listVotes(id);
      expect(votes).toHaveLength(2);
      expect(new Set(votes.map((v) => v.voter)).size).toBe(2);
      const [record] = await ledger.decisions.listDecisions({ id });
      expect(record?.status).toBe('decided');
      expect(votes.map((v) => v.voter)).toContain(record?.decider);
      const row = await ledger.requests.getRequest(id);
      expect(row?.status).toBe('completed');

      // The flow advanced once: one audited round delivered the decision, carrying both votes.
      const rounds = await audit.rounds(id);
      const delivering = rounds.filter((r) => r.received.some((a) => a.key === 'board_approval'));
      expect(delivering).toHaveLength(1);
      const delivered = delivering[0]!.received.find((a) => a.key === 'board_approval')!;
      expect(delivered.votes).toHaveLength(2);
      expect(delivering[0]!.outcome).toBe('complete');
      // Its result names both approvers; the first round's states answer it on any instance.
      const result = await runners[0]!.resume({ id, context: { principal: 'alice', roles: [] } });
      const said =
        result.type === 'complete' ? result.result.content.map((c) => (c as { text: string }).text).join('') : '';
      expect(said).toMatch(
        new RegExp(`^Spend of ${amount} approved \\((bob|dave|erin):yes,(bob|dave|erin):yes\\)\\.$`),
      );
    }
    // One decision.made per request, whoever's vote completed it.
    const claimed = await ledger.outbox.claimOutbox({
      now: Date.now() + 60_000,
      leaseUntil: Date.now() + 120_000,
      limit: 1000,
    });
    const madeIds = claimed
      .filter((m) => m.type === 'decision.made')
      .map((m) => (JSON.parse(m.body) as { data: { requestId: string } }).data.requestId);
    expect(madeIds).toHaveLength(RACES);
    expect(new Set(madeIds).size).toBe(RACES);
  });
});
