/**
 * A recorded outcome is bound to its state. Whoever can write to the ledger's
 * database can swap the sealed outcomes of two redeemed states; a retry must
 * then be refused (-32602 `bad_integrity`, logged on the server), never
 * answered with the other state's outcome. Shown on a real SQLite ledger file,
 * swapped with SQL, both through the runner (Alice's and Bob's access codes)
 * and over real HTTP on 127.0.0.1 with the official client.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFlowServerFactory, serveHttp } from '@baton/adapters';
import {
  type CallContext,
  createRequestStateCodec,
  createRunner,
  generateKey,
  type InputRequiredOutcome,
  type RoundOutcome,
  type RunnerLogEvent,
} from '@baton/engine';
import { createSqliteLedger } from '@baton/store/better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { grantTemporaryAccess } from '../examples/approvals/index.js';
import flows from './fixtures/adapter-flows/index.js';
import { connectHttp, expectInputRequired, protocolError, ROOT, textOf, toolRound } from './helpers/mcpClients.js';

// better-sqlite3 is the store's (optional peer) dependency: load the store's copy.
const Database = createRequire(join(ROOT, 'packages/store/package.json'))('better-sqlite3') as new (
  path: string,
) => {
  prepare(sql: string): { all(...args: unknown[]): unknown[]; run(...args: unknown[]): unknown };
  transaction<T extends (...args: never[]) => unknown>(fn: T): T;
  close(): void;
};

const dir = mkdtempSync(join(tmpdir(), 'baton-ledger-tamper-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Swap the recorded outcomes of two redeemed states, directly in the database file. */
function swapOutcomes(path: string): void {
  const db = new Database(path);
  try {
    const rows = db
      .prepare('SELECT jti, outcome FROM baton_redemptions WHERE outcome IS NOT NULL ORDER BY redeemed_at, jti')
      .all() as { jti: string; outcome: string }[];
    expect(rows).toHaveLength(2);
    const [a, b] = rows as [{ jti: string; outcome: string }, { jti: string; outcome: string }];
    const update = db.prepare('UPDATE baton_redemptions SET outcome = ? WHERE jti = ?');
    db.transaction(() => {
      update.run(b.outcome, a.jti);
      update.run(a.outcome, b.jti);
    })();
  } finally {
    db.close();
  }
}

const accept = (content: Record<string, unknown>) => ({ action: 'accept', content });
const text = (o: RoundOutcome) =>
  o.type === 'complete' ? o.result.content.map((c) => (c as { text: string }).text).join('') : `<${o.type}>`;
function expectInput(o: RoundOutcome): InputRequiredOutcome {
  if (o.type !== 'input_required') throw new Error(`expected input_required, got ${JSON.stringify(o)}`);
  return o;
}

describe('the runner on a SQLite ledger whose recorded outcomes were swapped', () => {
  it("refuses Bob's identical retry instead of answering with Alice's access code", async () => {
    const path = join(dir, 'runner.db');
    const ledger = createSqliteLedger({ path });
    const log: RunnerLogEvent[] = [];
    const runner = createRunner({
      flows: [grantTemporaryAccess],
      codec: createRequestStateCodec({ keys: [generateKey()] }),
      ledger,
      log: (event) => log.push(event),
    });
    const args = { resource: 'prod-db', minutes: 5 };
    const approval = { approval: accept({ approve: true }) };
    const grant = async (principal: string) => {
      const context: CallContext = { principal, method: 'tools/call', target: 'grant_temporary_access' };
      const asked = expectInput(await runner.run({ flow: 'grant_temporary_access', args, context }));
      const retry = { flow: 'grant_temporary_access', args, context, requestState: asked.requestState };
      const granted = await runner.run({ ...retry, inputResponses: approval });
      expect(text(granted)).toMatch(/code: \S+/);
      return { retry, granted };
    };
    const alice = await grant('alice');
    const bob = await grant('bob');
    expect(text(alice.granted)).not.toBe(text(bob.granted));
    // Before tampering, an identical retry gets the recorded outcome back.
    expect(await runner.run({ ...bob.retry, inputResponses: approval })).toEqual(bob.granted);

    swapOutcomes(path);
    for (const { retry } of [bob, alice]) {
      await expect(runner.run({ ...retry, inputResponses: approval })).rejects.toMatchObject({
        name: 'InvalidRequestStateError',
        reason: 'bad_integrity',
        message: 'Invalid or expired requestState',
      });
    }
    expect(log.filter((event) => event.type === 'invalid_state')).toEqual([
      expect.objectContaining({ flow: 'grant_temporary_access', reason: 'bad_integrity', detail: expect.any(String) }),
      expect.objectContaining({ flow: 'grant_temporary_access', reason: 'bad_integrity', detail: expect.any(String) }),
    ]);
    await ledger.close();
  });
});

describe('over HTTP, a SQLite ledger whose recorded outcomes were swapped', () => {
  it('answers the identical retry with -32602 bad_integrity, not the other instance’s result', async () => {
    const path = join(dir, 'http.db');
    const ledger = createSqliteLedger({ path });
    const runner = createRunner({ flows, ledger, codec: createRequestStateCodec({ keys: [generateKey()] }) });
    const serving = await serveHttp({ factory: createFlowServerFactory({ runner }), host: '127.0.0.1', port: 0 });
    const { client } = await connectHttp(serving.url);
    try {
      const answers = {
        confirm_deploy: { action: 'accept', content: { confirm: true } },
        change_ticket: { action: 'accept', content: { ticket: 'CHG-1' } },
      };
      const deploy = async (version: string) => {
        const call = { name: 'deploy_production', arguments: { version } };
        const first = expectInputRequired(await toolRound(client, call));
        const retry = { ...call, requestState: first.requestState, inputResponses: answers };
        expect(textOf((await toolRound(client, retry)) as { content: unknown })).toBe(
          `Deployed ${version} (ticket CHG-1)`,
        );
        return retry;
      };
      const one = await deploy('1.0.0');
      const two = await deploy('2.0.0');
      expect(textOf((await toolRound(client, one)) as { content: unknown })).toBe('Deployed 1.0.0 (ticket CHG-1)');

      swapOutcomes(path);
      for (const retry of [one, two]) {
        expect(await protocolError(toolRound(client, retry))).toEqual({
          code: -32602,
          message: 'Invalid or expired requestState',
          data: { reason: 'bad_integrity' },
        });
      }
    } finally {
      await client.close();
      await serving.close();
      await ledger.close();
    }
  });
});
