/**
 * Drives every example flow of `examples/approvals` through a round runner
 * from its first call to its result, the way a client and the people who
 * decide would, and records every requestState minted on the way (the
 * caller's rounds and the deciders'). Used by `bench-engine.ts` to report
 * the state size of every round of every example; not a test.
 */
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
import examples from '../examples/approvals/index.js';

/** One minted state: who it was minted for, the token and the claims it carries. */
export interface MintedState {
  /** `flow round N` for the caller's states, `baton_decide (flow)` for a decider's. */
  readonly label: string;
  readonly flow: string;
  readonly target: string;
  readonly round: number;
  readonly token: string;
  readonly body: unknown;
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

/** How each example is driven, by flow name (every flow of `examples/approvals`). */
export const exampleDrives: Record<string, ExampleDrive> = {
  deploy_production: async (runner) => {
    await call(runner, 'deploy_production', { version: '1.2.3' }, [
      { confirm_deploy: accept({ confirm: true }), change_ticket: accept({ ticket: 'CHG-1234' }) },
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
    const args = { orderId: `ORD-${Math.random().toString(36).slice(2, 10)}`, amount: 450 };
    const first = expectInput(await call(runner, 'refund_request', args, []));
    const waiting = expectInput(
      await call(runner, 'refund_request', args, [{ reason: accept({ reason: 'damaged', note: 'box crushed' }) }]),
    );
    void first;
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
