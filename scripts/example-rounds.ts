/**
 * Drives every example flow of `examples/approvals` through a round runner
 * from its first call to its result, the way a client and the people who
 * decide would, and records every requestState minted on the way (the
 * caller's rounds and the deciders'). Used by `bench-engine.ts` to report
 * the state size of every round of every example; not a test.
 */
import { randomBytes } from 'node:crypto';
import {
  type CallContext,
  createRunner,
  type DecisionCaller,
  type MintClaims,
  type RequestStateCodec,
  type RoundOutcome,
  type Runner,
  type StateBinding,
} from '@baton/engine';
import { createMemoryLedger } from '@baton/store';
import { createRequestStateCodec as createSdkCodec } from '@modelcontextprotocol/server';
import { type AnyStateMachine, createActor } from 'xstate';
import examples from '../examples/approvals/index.js';
import { type CompactSnapshot, expandSnapshot } from '../packages/engine/src/round/snapshot.js';

/** One minted state: who it was minted for, the token and the claims it carries. */
export interface MintedState {
  /** `flow round N` for the caller's states, `baton_decide (flow)` for a decider's. */
  readonly label: string;
  readonly flow: string;
  readonly target: string;
  readonly round: number;
  readonly token: string;
  readonly body: unknown;
  /** What the state is bound to (it opens with this binding only). */
  readonly binding: StateBinding;
}

/** A codec that records what `codec` mints. */
function recording(codec: RequestStateCodec, minted: MintedState[]): RequestStateCodec {
  return {
    ...codec,
    mode: codec.mode,
    currentKeyId: codec.currentKeyId,
    mint<TBody>(binding: StateBinding, claims: MintClaims<TBody>, options?: { ttlSeconds?: number }) {
      const out = codec.mint(binding, claims, options);
      const label =
        binding.target === binding.flow
          ? `${binding.flow} round ${claims.round}`
          : `${binding.flow} via ${binding.target} round ${claims.round}`;
      minted.push({
        label,
        flow: binding.flow,
        target: binding.target,
        round: claims.round,
        token: out.token,
        body: claims.body,
        binding,
      });
      return out;
    },
  };
}

const accept = (content: Record<string, unknown>) => ({ action: 'accept', content });
const alice: CallContext = { principal: 'alice', method: 'tools/call', target: '' };
const manager: DecisionCaller = { principal: 'bob', roles: ['manager'] };
const finance: DecisionCaller = { principal: 'carol', roles: ['finance'] };
const supervisor: DecisionCaller = { principal: 'sam', roles: ['supervisor'] };

function expectInput(outcome: RoundOutcome) {
  if (outcome.type !== 'input_required') throw new Error(`expected input_required, got ${outcome.type}`);
  return outcome;
}

/** Call `flow` with `args` and answer each round with the next of `answers`; returns the last outcome. */
async function call(runner: Runner, flow: string, args: unknown, answers: Record<string, unknown>[]) {
  const context = { ...alice, target: flow };
  let outcome = await runner.run({ flow, args, context });
  for (const inputResponses of answers) {
    const { requestState } = expectInput(outcome);
    outcome = await runner.run({ flow, args, context, requestState, inputResponses });
  }
  return outcome;
}

/** A full `baton_decide` call: ask, then answer. */
async function decide(runner: Runner, who: DecisionCaller, id: string, approve: boolean) {
  const asked = expectInput(await runner.decide({ id, context: who }));
  return runner.decide({
    id,
    context: who,
    requestState: asked.requestState,
    inputResponses: { decision: accept({ approve }) },
  });
}

/** One complete run of an example flow on `runner`. */
export type ExampleDrive = (runner: Runner) => Promise<void>;

/** How each example is driven, by flow name (every flow of `examples/approvals`), and a variant. */
export const exampleDrives: Record<string, ExampleDrive> = {
  deploy_production: async (runner) => {
    await call(runner, 'deploy_production', { version: '1.2.3' }, [
      { confirm_deploy: accept({ confirm: true }), change_ticket: accept({ ticket: 'CHG-1234' }) },
    ]);
  },
  // The caller answers one question per round: the second state holds the first answer.
  'deploy_production (one answer per round)': async (runner) => {
    await call(runner, 'deploy_production', { version: '1.2.4' }, [
      { confirm_deploy: accept({ confirm: true }) },
      { change_ticket: accept({ ticket: 'CHG-1235' }) },
    ]);
  },
  expense_approval: async (runner) => {
    const first = expectInput(
      await call(runner, 'expense_approval', { amount: 2400, purpose: 'Team offsite venue deposit' }, []),
    );
    await decide(runner, manager, first.fid, true);
    await decide(runner, finance, first.fid, true);
    // The requester's retry-later round after both decisions: the result.
    await runner.run({
      flow: 'expense_approval',
      args: { amount: 2400, purpose: 'Team offsite venue deposit' },
      context: { ...alice, target: 'expense_approval' },
      requestState: first.requestState,
    });
  },
  refund_request: async (runner) => {
    // Above 200 a supervisor decides: the reason form, then a retry-later state while sam decides.
    const args = { orderId: 'ORD-20261130-0042', amount: 450 };
    const waiting = expectInput(
      await call(runner, 'refund_request', args, [{ reason: accept({ reason: 'damaged', note: 'box crushed' }) }]),
    );
    await decide(runner, supervisor, waiting.fid, true);
    await runner.run({
      flow: 'refund_request',
      args,
      context: { ...alice, target: 'refund_request' },
      requestState: waiting.requestState,
    });
  },
  draft_release_notes: async (runner) => {
    await call(runner, 'draft_release_notes', { version: '5.0.0' }, [
      { workspace: { roots: [{ uri: 'file:///work/baton', name: 'baton' }] } },
      {
        draft: {
          role: 'assistant',
          model: 'bench-model',
          content: { type: 'text', text: 'Release 5.0.0: faster rounds, smaller states, and fixed bugs.' },
        },
      },
      { publish: accept({ publish: true }) },
    ]);
  },
  grant_temporary_access: async (runner) => {
    await call(runner, 'grant_temporary_access', { resource: 'prod-db', minutes: 30 }, [
      { approval: accept({ approve: true }) },
    ]);
  },
  redeem_access_code: async (runner) => {
    await call(runner, 'redeem_access_code', { code: 'not-a-code' }, []);
  },
};

/** Every state minted by one complete run of each example, on a fresh memory ledger. */
export async function mintedByExample(codec: RequestStateCodec): Promise<Map<string, MintedState[]>> {
  const out = new Map<string, MintedState[]>();
  for (const [name, drive] of Object.entries(exampleDrives)) {
    const minted: MintedState[] = [];
    const ledger = createMemoryLedger();
    const runner = createRunner({
      flows: examples,
      codec: recording(codec, minted),
      ledger,
      holdMs: 5,
      pollMs: 1,
    });
    await drive(runner);
    await ledger.close();
    out.set(name, minted);
  }
  return out;
}

/** The examples' flows, by name. */
export const exampleFlows = new Map(examples.map((flow) => [flow.name, flow]));

/**
 * What a hand-written server would carry for the same point, as the SDK's own signed codec
 * mints it: for a state holding a machine snapshot, XState's raw `getPersistedSnapshot()` of the
 * machine restored from it (`kind: 'raw snapshot'`); for a decider's state, which holds none,
 * the same body (`kind: 'same body'`).
 */
export async function sdkBaseline(state: MintedState): Promise<{ token: string; kind: 'raw snapshot' | 'same body' }> {
  const sdk = createSdkCodec<unknown>({ key: randomBytes(32).toString('base64url') });
  const body = state.body as { s?: CompactSnapshot } | undefined;
  if (body?.s === undefined)
    return { token: await sdk.mint(JSON.parse(JSON.stringify(state.body))), kind: 'same body' };
  const flow = exampleFlows.get(state.flow)!;
  const actor = createActor(flow.machine as AnyStateMachine, { snapshot: expandSnapshot(body.s) as never });
  return { token: await sdk.mint(JSON.parse(JSON.stringify(actor.getPersistedSnapshot()))), kind: 'raw snapshot' };
}
