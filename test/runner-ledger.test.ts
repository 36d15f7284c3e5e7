/**
 * The round runner on real ledgers (memory and a SQLite file): single use,
 * replay-safe retries, and single-use access codes minted by a flow.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type CallContext,
  createRequestStateCodec,
  createRunner,
  defineFlow,
  type FullLedger,
  generateKey,
  type InputRequiredOutcome,
  type RoundOutcome,
} from '@baton/engine';
import { createMemoryLedger } from '@baton/store';
import { createSqliteLedger } from '@baton/store/better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { fromPromise, type InspectionEvent, setup } from 'xstate';
import { z } from 'zod';
import { deployProduction, grantTemporaryAccess, redeemAccessCode } from '../examples/approvals/index.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-runner-ledger-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ledgers: [string, () => FullLedger][] = [
  ['memory', () => createMemoryLedger()],
  ['sqlite', () => createSqliteLedger({ path: join(dir, `ledger-${Math.random().toString(36).slice(2)}.db`) })],
];

const accept = (content: Record<string, unknown>) => ({ action: 'accept', content });
const text = (o: RoundOutcome) =>
  o.type === 'complete' ? o.result.content.map((c) => (c as { text: string }).text).join('') : `<${o.type}>`;
function expectInput(o: RoundOutcome): InputRequiredOutcome {
  if (o.type !== 'input_required') throw new Error(`expected input_required, got ${JSON.stringify(o)}`);
  return o;
}

describe.each(ledgers)('runner with the %s ledger', (_name, makeLedger) => {
  let clock = Date.UTC(2026, 10, 29, 12);
  const now = () => clock;
  const keys = [generateKey()];
  const setupRunner = () => {
    const ledger = makeLedger();
    const runner = createRunner({
      flows: [deployProduction, grantTemporaryAccess, redeemAccessCode],
      codec: createRequestStateCodec({ keys, now }),
      ledger,
      now,
    });
    return { ledger, runner };
  };
  const ctx: CallContext = { principal: 'alice', method: 'tools/call', target: 'deploy_production' };
  const args = { version: '9.9.9' };
  const answers = { confirm_deploy: accept({ confirm: true }), change_ticket: accept({ ticket: 'CHG-1' }) };

  it('redeems a state once; a retry with the same answers gets the recorded outcome; other answers are a replay', async () => {
    const { ledger, runner } = setupRunner();
    const first = expectInput(await runner.run({ flow: 'deploy_production', args, context: ctx }));
    const request = { flow: 'deploy_production', args, context: ctx, requestState: first.requestState };
    const done = await runner.run({ ...request, inputResponses: answers });
    expect(text(done)).toContain('Deployed 9.9.9');
    // The response was lost; the client retries the same request: same outcome, nothing re-run.
    const retried = await runner.run({ ...request, inputResponses: { ...answers } });
    expect(retried).toEqual(done);
    await expect(
      runner.run({ ...request, inputResponses: { ...answers, confirm_deploy: accept({ confirm: false }) } }),
    ).rejects.toMatchObject({ reason: 'replayed', message: 'Invalid or expired requestState' });
    await ledger.close();
  });

  it('shows the inspector nothing of a refused replay or a recorded retry', async () => {
    const ledger = makeLedger();
    const events: InspectionEvent[] = [];
    const runner = createRunner({
      flows: [deployProduction],
      codec: createRequestStateCodec({ keys, now }),
      ledger,
      now,
      inspect: (event) => events.push(event),
    });
    const first = expectInput(await runner.run({ flow: 'deploy_production', args, context: ctx }));
    const request = { flow: 'deploy_production', args, context: ctx, requestState: first.requestState };
    await runner.run({ ...request, inputResponses: answers });
    const served = events.length;
    expect(served).toBeGreaterThan(0);
    await runner.run({ ...request, inputResponses: { ...answers } });
    await expect(
      runner.run({ ...request, inputResponses: { ...answers, confirm_deploy: accept({ confirm: false }) } }),
    ).rejects.toMatchObject({ reason: 'replayed' });
    expect(events).toHaveLength(served);
    await ledger.close();
  });

  it('rejects a retry after the state expired', async () => {
    const { ledger, runner } = setupRunner();
    const first = expectInput(await runner.run({ flow: 'deploy_production', args, context: ctx }));
    const request = { flow: 'deploy_production', args, context: ctx, requestState: first.requestState };
    await runner.run({ ...request, inputResponses: answers });
    clock += 25 * 3600_000;
    await expect(runner.run({ ...request, inputResponses: answers })).rejects.toMatchObject({ reason: 'expired' });
    await ledger.close();
  });

  it('mints a one-time access code that redeems exactly once', async () => {
    const { ledger, runner } = setupRunner();
    const grantCtx: CallContext = { principal: 'bob', method: 'tools/call', target: 'grant_temporary_access' };
    const grantArgs = { resource: 'prod-db', minutes: 5 };
    const asked = expectInput(await runner.run({ flow: 'grant_temporary_access', args: grantArgs, context: grantCtx }));
    expect(Object.keys(asked.inputRequests)).toEqual(['approval']);
    const granted = await runner.run({
      flow: 'grant_temporary_access',
      args: grantArgs,
      context: grantCtx,
      requestState: asked.requestState,
      inputResponses: { approval: accept({ approve: true }) },
    });
    const code = /code: (\S+)/.exec(text(granted))?.[1];
    expect(code).toBeTruthy();
    const redeem = (c: string) =>
      runner.run({
        flow: 'redeem_access_code',
        args: { code: c },
        context: { principal: 'carol', method: 'tools/call', target: 'redeem_access_code' },
      });
    const [a, b] = await Promise.all([redeem(code!), redeem(code!)]);
    const texts = [text(a), text(b)].sort();
    expect(texts[0]).toContain('Access code accepted: access to prod-db');
    expect(texts[1]).toContain('already used');
    expect(text(await redeem('not-a-real-code'))).toContain('not known');
    const another = expectInput(
      await runner.run({ flow: 'grant_temporary_access', args: grantArgs, context: grantCtx }),
    );
    const granted2 = await runner.run({
      flow: 'grant_temporary_access',
      args: grantArgs,
      context: grantCtx,
      requestState: another.requestState,
      inputResponses: { approval: accept({ approve: true }) },
    });
    const code2 = /code: (\S+)/.exec(text(granted2))![1]!;
    clock += 6 * 60_000;
    expect(text(await redeem(code2))).toContain('expired');
    for (const o of [a, b]) expect(o.type).toBe('complete');
    await ledger.close();
  });
});

describe('a ledger that cannot record outcomes', () => {
  it('still returns the round outcome (the effects happened) and logs the failure', async () => {
    const inner = createMemoryLedger();
    const failing: FullLedger = {
      ...inner,
      redemptions: {
        ...inner.redemptions,
        redeem: (r) => inner.redemptions.redeem(r),
        recordOutcome: async () => {
          throw new Error('disk full');
        },
      },
    };
    const errors: unknown[] = [];
    const runner = createRunner({
      flows: [deployProduction],
      codec: createRequestStateCodec({ keys: [generateKey()] }),
      ledger: failing,
      // Watched by an inspector, the round redeems first and records its outcome after it (an
      // unwatched answer round of deploy_production, which has no side effect of its own, would
      // be redeemed with its outcome in one write: `round/purity.ts`).
      inspect: () => {},
      log: (e) => {
        if (e.type === 'flow_error') errors.push(e.error);
      },
    });
    const ctx: CallContext = { principal: 'a', method: 'tools/call', target: 'deploy_production' };
    const first = expectInput(await runner.run({ flow: 'deploy_production', args: { version: '1' }, context: ctx }));
    const done = await runner.run({
      flow: 'deploy_production',
      args: { version: '1' },
      context: ctx,
      requestState: first.requestState,
      inputResponses: {
        confirm_deploy: accept({ confirm: true }),
        change_ticket: accept({ ticket: 'CHG-1' }),
      },
    });
    expect(text(done)).toContain('Deployed 1');
    expect(String(errors[0])).toContain('disk full');
    await inner.close();
  });
});

describe('a flow that needs a ledger, on a runner without one', () => {
  const keys = [generateKey()];
  const grantCtx: CallContext = { principal: 'bob', method: 'tools/call', target: 'grant_temporary_access' };
  const grantArgs = { resource: 'prod-db', minutes: 5 };

  it('is refused up front, in words, before it asks anything (needsLedger)', async () => {
    const logged: unknown[] = [];
    const runner = createRunner({
      flows: [grantTemporaryAccess, redeemAccessCode],
      codec: createRequestStateCodec({ keys }),
      log: (event) => logged.push(event),
    });
    expect(grantTemporaryAccess.needsLedger).toBe(true);
    expect(redeemAccessCode.needsLedger).toBe(true);
    expect(deployProduction.needsLedger).toBe(false);
    for (const [flow, args] of [
      ['grant_temporary_access', grantArgs],
      ['redeem_access_code', { code: 'abc' }],
    ] as const) {
      const outcome = await runner.run({ flow, args, context: { ...grantCtx, target: flow } });
      expect(outcome).toMatchObject({ type: 'error', flow, round: 1 });
      expect((outcome as { message: string }).message).toBe(
        `"${flow}" needs a ledger and this server has none: the server must run with a ledger (baton serve --ledger URL).`,
      );
    }
    expect(logged).toContainEqual(expect.objectContaining({ type: 'flow_error', flow: 'grant_temporary_access' }));
  });

  it('that uses single-use tokens without declaring it gets a sentence, not "the server log has details"', async () => {
    const undeclared = defineFlow({
      name: 'mint_undeclared',
      description: 'mints a token without declaring needsLedger',
      args: z.object({}),
      inputs: {},
      machine: setup({
        actors: { mint: fromPromise<string>(async () => 'placeholder') },
      }).createMachine({
        initial: 'minting',
        states: {
          minting: { invoke: { id: 'mint', src: 'mint', onDone: 'done' } },
          done: { type: 'final' },
        },
      }),
      implement: ({ tokens }) => ({
        actors: { mint: fromPromise(async () => tokens.mint({ purpose: 'x', ttlSeconds: 60 })) },
      }),
    });
    const runner = createRunner({ flows: [undeclared], codec: createRequestStateCodec({ keys }) });
    const outcome = await runner.run({
      flow: 'mint_undeclared',
      args: {},
      context: { principal: 'bob', method: 'tools/call', target: 'mint_undeclared' },
    });
    expect(outcome).toMatchObject({
      type: 'error',
      message:
        'This flow uses single-use tokens, which need a ledger: the server must run with one (baton serve --ledger).',
    });
  });
});
