/**
 * Recorded runs for the `baton inspect` tests and screenshots: the approval
 * examples driven through the real runner into a real SQLite audit log and
 * ledger (one file). Deploys that finished (one through an answer held from
 * an earlier round), one cancelled and one abandoned (its state expired
 * unanswered: played on a clock two hours back); expenses waiting on finance
 * and rejected by a manager (`auditValues`: values shown, requester names
 * stored); a code redemption whose sensitive argument is recorded redacted.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CallContext, createRequestStateCodec, createRunner, generateKey, type RoundOutcome } from '@baton/engine';
import { openAuditLog, openLedger } from '@baton/store';
import { deployProduction, expenseApproval, redeemAccessCode } from '../../examples/approvals/index.js';

type Opened = Awaited<ReturnType<typeof openAuditLog>>;
type OpenedLedger = Awaited<ReturnType<typeof openLedger>>;

/** The recorded scenario: its database and the fids of each run. */
export interface InspectScenario {
  readonly dir: string;
  /** `sqlite:<path>` */
  readonly url: string;
  readonly audit: Opened;
  readonly ledger: OpenedLedger;
  readonly fids: {
    deployed: string;
    cancelled: string;
    abandoned: string;
    expenseWaiting: string;
    expenseRejected: string;
    redeemed: string;
  };
  /** Finance approves the waiting expense (a new round, recorded now). */
  approveByFinance(): Promise<void>;
  close(): Promise<void>;
}

const asked = (outcome: RoundOutcome) => {
  if (outcome.type !== 'input_required') throw new Error(`expected input_required, got ${JSON.stringify(outcome)}`);
  return outcome;
};

/** Record the scenario in a fresh SQLite file; `clock` (default `Date.now`) times every round. */
export async function recordInspectScenario(clock: () => number = Date.now): Promise<InspectScenario> {
  const dir = await mkdtemp(join(tmpdir(), 'baton-inspect-scenario-'));
  const url = `sqlite:${join(dir, 'baton.db')}`;
  const audit = await openAuditLog(url, { pruneIntervalMs: 0 });
  const ledger = await openLedger(url, { pruneIntervalMs: 0 });
  const keys = [generateKey()];
  const runner = (options: { now?: () => number; storeRequesterNames?: boolean } = {}) => {
    const now = options.now ?? clock;
    return createRunner({
      flows: [deployProduction, expenseApproval, redeemAccessCode],
      codec: createRequestStateCodec({ keys, now }),
      ledger,
      audit,
      holdMs: 1,
      pollMs: 1,
      ...options,
      now,
    });
  };
  const plain = runner();
  const named = runner({ storeRequesterNames: true });
  const alice: CallContext = { principal: 'alice@example.com', method: 'tools/call', target: 'deploy_production' };

  // Deployed in three rounds: the confirmation is held while the ticket is refused, then used.
  const deploy = (requestState?: string, inputResponses?: Record<string, unknown>) =>
    plain.run({
      flow: 'deploy_production',
      args: { version: '2.4.0' },
      context: alice,
      ...(requestState ? { requestState } : {}),
      ...(inputResponses ? { inputResponses } : {}),
    });
  const d1 = asked(await deploy());
  const d2 = asked(
    await deploy(d1.requestState, {
      confirm_deploy: { action: 'accept', content: { confirm: true } },
      change_ticket: { action: 'accept', content: { ticket: '' } },
    }),
  );
  const d3 = await deploy(d2.requestState, { change_ticket: { action: 'accept', content: { ticket: 'CHG-1234' } } });
  if (d3.type !== 'complete') throw new Error(`deploy did not complete: ${JSON.stringify(d3)}`);

  // Cancelled: the confirmation says no.
  const c1 = asked(await deploy());
  await deploy(c1.requestState, {
    confirm_deploy: { action: 'accept', content: { confirm: false } },
    change_ticket: { action: 'accept', content: { ticket: 'CHG-1' } },
  });

  // Abandoned: asked two hours ago, never answered (its state lived 15 minutes at most).
  const past = () => clock() - 2 * 3600_000;
  const abandoned = asked(
    await runner({ now: past }).run({ flow: 'deploy_production', args: { version: '2.3.9' }, context: alice }),
  );

  // Expenses: alice asks, bob (manager) decides.
  const expense = (amount: number, purpose: string) =>
    named.run({
      flow: 'expense_approval',
      args: { amount, purpose },
      context: { ...alice, target: 'expense_approval' },
    });
  const decide = async (id: string, principal: string, roles: string[], approve: boolean, comment?: string) => {
    const context = { principal, roles };
    const form = asked(await named.decide({ id, context }));
    await named.decide({
      id,
      context,
      requestState: form.requestState,
      inputResponses: { decision: { action: 'accept', content: { approve, ...(comment ? { comment } : {}) } } },
    });
  };
  const waiting = await expense(2500, 'team offsite');
  await decide(waiting.fid, 'bob@example.com', ['manager'], true, 'fine by me');
  const rejected = await expense(400, 'new chair');
  await decide(rejected.fid, 'bob@example.com', ['manager'], false, 'not this quarter');

  // A code redemption: its argument is a credential.
  const redeemed = await plain.run({
    flow: 'redeem_access_code',
    args: { code: 'SECRET-CODE-42' },
    context: { ...alice, target: 'redeem_access_code' },
  });

  return {
    dir,
    url,
    audit,
    ledger,
    fids: {
      deployed: d1.fid,
      cancelled: c1.fid,
      abandoned: abandoned.fid,
      expenseWaiting: waiting.fid,
      expenseRejected: rejected.fid,
      redeemed: redeemed.fid,
    },
    approveByFinance: () => decide(waiting.fid, 'carol@example.com', ['finance'], true),
    async close() {
      await ledger.close();
      await audit.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
