/**
 * Issue 16, target 6, as a regression test: every state an example flow of
 * `examples/approvals` mints that carries a machine snapshot is no longer than
 * the MCP SDK's own signed token of XState's raw persisted snapshot at the
 * same point, while sealed (AES-256-GCM). Sizes depend on the flows and their
 * arguments only, never on timing. The states minted are real: every example
 * is driven to its result through a runner on a memory ledger, and each state
 * opens again through the real codec.
 */
import { createRequestStateCodec, generateKey } from '@baton/engine';
import { describe, expect, it } from 'vitest';
import { exampleDrives, exampleFlows, mintedByExample, sdkBaseline } from '../scripts/example-rounds.js';

describe('state size of every example (sealed)', async () => {
  const codec = createRequestStateCodec({ keys: [generateKey()] });
  const minted = await mintedByExample(codec);

  it('drives every example flow', () => {
    expect([...minted.keys()].sort()).toEqual(Object.keys(exampleDrives).sort());
    for (const flow of exampleFlows.keys()) expect(minted.has(flow)).toBe(true);
    expect(minted.get('deploy_production')!.length).toBeGreaterThan(0);
    // redeem_access_code completes in its first round: it mints no state.
    expect(minted.get('redeem_access_code')).toEqual([]);
  });

  const states = [...minted.values()].flat();
  it.each(states.map((state) => [state.label, state] as const))(
    '%s is at most the SDK token of the same point',
    async (_label, state) => {
      const baseline = await sdkBaseline(state);
      if (baseline.kind === 'raw snapshot') expect(state.token.length).toBeLessThanOrEqual(baseline.token.length);
      // A decider's state holds no snapshot: 64 bytes of ids, nonce and tag are its floor.
      else expect(state.token.length).toBeLessThanOrEqual(140);
      // A format-version-3 state that opens, under its binding, to the body it was minted with.
      expect(Buffer.from(state.token, 'base64url')[0]).toBe(3);
      expect(codec.open(state.token, state.binding).body).toEqual(JSON.parse(JSON.stringify(state.body)));
    },
  );
});
