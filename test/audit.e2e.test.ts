/**
 * The audit trail of a flow decided by someone else, end to end: `baton serve`
 * with `--audit` on a SQLite ledger serves `purchase_order` (a form, then an
 * approver's decision, then the durable step that places the order); alice
 * (the requester) and bob (role `approver`) are real SDK clients over HTTP
 * with bearer tokens; `baton inspect` reads the same database. Its API must
 * show every round, whoever's call ran it (`via`): alice's rounds, bob's
 * `baton_decide` round that took the transition and ran the step, alice's
 * `baton_resume`, and a `baton_withdraw`; each instance's whole path in
 * order, and its true final state (never "finished" while it still waits).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKey } from '@baton/engine';
import type { Client, ElicitResult } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cliArgs, connectHttp, ROOT, type ServeProcess, startServe, textOf } from './helpers/mcpClients.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-audit-e2e-'));
const LEDGER = `sqlite:${join(dir, 'baton.db')}`;
const FLOWS = 'test/fixtures/purchase-order';
const token = (name: string) => `${name}-token-${'y'.repeat(24)}`;
const tokensFile = join(dir, 'tokens.json');
writeFileSync(
  tokensFile,
  JSON.stringify({ [token('alice')]: 'alice', [token('bob')]: { principal: 'bob', roles: ['approver'] } }),
);

let server: ServeProcess;
let inspect: ChildProcess;
let page: URL;

beforeAll(async () => {
  server = await startServe(
    [FLOWS, '--http', '127.0.0.1:0', '--ledger', LEDGER, '--audit', '--auth-tokens', tokensFile, '--wait-in-call', '1'],
    { BATON_KEYS: generateKey() },
  );
  inspect = spawn(process.execPath, cliArgs(['inspect', FLOWS, '--audit', LEDGER]), {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  page = await new Promise<URL>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`baton inspect did not start within 60 s:\n${stderr}`)), 60_000);
    inspect.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /inspecting .* at (http:\/\/127\.0\.0\.1:\d+\/)/.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve(new URL(match[1]!));
      }
    });
    inspect.once('exit', (code) => reject(new Error(`baton inspect exited with ${code}:\n${stderr}`)));
  });
}, 120_000);

const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});
afterAll(async () => {
  inspect?.kill('SIGTERM');
  await server?.stop();
  if (inspect && inspect.exitCode === null && inspect.signalCode === null) {
    await new Promise((resolve) => inspect.once('exit', resolve));
  }
  rmSync(dir, { recursive: true, force: true });
});

/** A client for `name`; it answers alice's order form, and bob's decision form with `approve`. */
async function as(name: 'alice' | 'bob', approve = true): Promise<Client> {
  const { client } = await connectHttp(server.url, {
    token: token(name),
    elicit: (): ElicitResult =>
      name === 'alice'
        ? { action: 'accept', content: { item: 'paper', quantity: 3 } }
        : { action: 'accept', content: { approve } },
  });
  clients.push(client);
  return client;
}

/** Alice orders: her call answers the form, then completes with the waiting result. Returns the id. */
async function order(alice: Client): Promise<string> {
  const result = await alice.callTool({ name: 'purchase_order', arguments: {} });
  expect(result.isError).toBeFalsy();
  const waiting = result.structuredContent as { status: string; id: string };
  expect(waiting).toMatchObject({ status: 'waiting', waitingFor: [{ key: 'approval', role: 'approver' }] });
  return waiting.id;
}

/** What `baton inspect`'s API says about an instance. */
async function inspected(fid: string): Promise<any> {
  const response = await fetch(new URL(`/api/instances/${encodeURIComponent(fid)}`, page));
  expect(response.status).toBe(200);
  return response.json();
}

/** Every state the instance passed through, in order, round after round (repeats once). */
function wholePath(rounds: readonly { before: unknown; path: readonly unknown[] }[]): unknown[] {
  const values = rounds.flatMap((round) => [round.before, ...round.path]).filter((value) => value !== null);
  return values.filter((value, i) => i === 0 || JSON.stringify(value) !== JSON.stringify(values[i - 1]));
}

describe('the audit trail of a purchase order decided by someone else', () => {
  it('records the decider’s round that took the transition and ran the step, and the resume; inspect shows where it ended', async () => {
    const alice = await as('alice');
    const id = await order(alice);

    // Alice's call ended with "waiting": the instance is not finished, whatever that round's outcome.
    const parked = await inspected(id);
    expect(parked.details.status).toMatchObject({ state: 'waiting' });
    expect(parked.details.status.text).toMatch(/approval/);
    expect(parked.rounds.every((round: { via: string }) => round.via === 'call')).toBe(true);

    const bob = await as('bob');
    const decided = await bob.callTool({ name: 'baton_decide', arguments: { id } });
    expect(decided.isError).toBeFalsy();
    expect(textOf(decided)).toMatch(
      /^Recorded approval on request .* The flow has ended: Order PO-PAPER-3-\S+ placed\.$/,
    );
    const resumed = await alice.callTool({ name: 'baton_resume', arguments: { id } });
    expect(textOf(resumed)).toMatch(/^Order PO-PAPER-3-\S+ placed\.$/);

    const one = await inspected(id);
    const rounds = one.rounds as {
      round: number;
      via: string;
      principal: string;
      before: unknown;
      after: unknown;
      path: unknown[];
      outcome: string;
      received: { key: string; action: string; decider?: string }[];
    }[];
    // Every round, in order, numbered once each: alice's calls, bob's decision, alice's resume.
    const vias = rounds.map((round) => round.via);
    const calls = vias.indexOf('decide');
    expect(calls).toBeGreaterThanOrEqual(2); // the form's round and the waiting one, at least
    expect(vias).toEqual([...Array(calls).fill('call'), 'decide', 'resume']);
    const numbers = rounds.map((round) => round.round);
    expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
    expect(new Set(numbers).size).toBe(numbers.length);
    expect(wholePath(rounds)).toEqual(['collecting', 'awaitingApproval', 'placing', 'placed']);

    // Bob's round: the decision delivered, the transition taken, the step run, the flow ended.
    const decide = rounds[calls]!;
    expect(decide).toMatchObject({
      before: 'awaitingApproval',
      after: 'placed',
      path: ['awaitingApproval', 'placing', 'placed'],
      outcome: 'complete',
    });
    // With when it was decided and through which channel (the baton_decide tool); no name is stored.
    expect(decide.received).toEqual([
      { key: 'approval', action: 'accept', decider: decide.principal, decidedAt: expect.any(Number), via: 'decide' },
    ]);
    // Principals are keyed hashes, never names: bob's differs from alice's.
    expect(decide.principal).not.toBe(rounds[0]!.principal);
    expect(JSON.stringify(rounds)).not.toMatch(/"(alice|bob)"/);
    // Alice's resume found it ended, and moved nothing.
    expect(rounds.at(-1)).toMatchObject({ via: 'resume', before: null, after: null, path: [], outcome: 'complete' });
    expect(rounds.at(-1)!.principal).toBe(rounds[0]!.principal);

    // The true final state, next to the ledger's status; the graph has the step's state on the path.
    expect(one.details.status).toEqual({ state: 'finished', finalState: 'placed', text: 'finished in placed' });
    expect(one.waiting).toMatchObject({ source: 'ledger', status: 'completed' });
    expect(one.visited.map((state: string) => state.split('.').pop())).toEqual(
      expect.arrayContaining(['collecting', 'awaitingApproval', 'placing', 'placed']),
    );
    expect(one.rounds[calls].edges.length).toBeGreaterThanOrEqual(2);
    expect(one.details.decisions).toEqual([
      expect.objectContaining({
        key: 'approval',
        status: 'decided',
        deciderHash: decide.principal,
        round: decide.round,
      }),
    ]);
  }, 90_000);

  it('records the requester’s withdrawal as its own round, and the state it ended in', async () => {
    const alice = await as('alice');
    const id = await order(alice);
    const withdrawn = await alice.callTool({ name: 'baton_withdraw', arguments: { id } });
    expect(textOf(withdrawn)).toMatch(/^Withdrawn: request /);

    const one = await inspected(id);
    const vias = one.rounds.map((round: { via: string }) => round.via);
    expect(vias.at(-1)).toBe('withdraw');
    expect(vias.slice(0, -1).every((via: string) => via === 'call')).toBe(true);
    expect(wholePath(one.rounds)).toEqual(['collecting', 'awaitingApproval', 'withdrawn']);
    expect(one.rounds.at(-1)).toMatchObject({ before: 'awaitingApproval', after: 'withdrawn', outcome: 'complete' });
    expect(one.rounds.at(-1).principal).toBe(one.rounds[0].principal);
    expect(one.details.status).toMatchObject({ state: 'withdrawn', finalState: 'withdrawn' });
  }, 90_000);
});
