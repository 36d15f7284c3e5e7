/**
 * Durable steps end to end: `baton serve` processes over HTTP (loopback),
 * the official SDK client in manual rounds, one SQLite ledger file shared by
 * two instances, and the flows module `test/fixtures/step-flows`, whose step
 * appends a line to a file this test owns each time it starts (the side
 * effects that happened). A storm of identical rounds on the step's round
 * executes it once (duplicates get its recorded outcome, or the retryable
 * -32000 `in_progress`, never `replayed`); a lost response is answered with the recorded result; a step slower
 * than the round budget completes on a later round served by the OTHER
 * instance; SIGKILL of the instance running a step makes the other run it
 * again after the lease, with the same idempotency key, and the flow
 * completes; without a ledger the flow is left out unless --allow-replays.
 * Every wait is bounded.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKey } from '@baton/engine';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  connectHttp,
  expectInputRequired,
  type ServeProcess,
  startServe,
  textOf,
  toolRound,
} from './helpers/mcpClients.js';
import { CONFIRM, confirmedRound, continueUntilDone, stepEffects } from './helpers/stepFlows.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-steps-e2e-'));
const BATON_KEYS = generateKey();
const LOG = join(dir, 'side-effects.log');
writeFileSync(LOG, '');
const effects = (order: string) => stepEffects(LOG, order);
const ledger = `sqlite:${join(dir, 'ledger.db')}`;
const env = { BATON_KEYS, BATON_STEP_LOG: LOG, BATON_STEP_LEASE_MS: '1000' };
const common = ['test/fixtures/step-flows', '--http', '127.0.0.1:0', '--ledger', ledger];

const servers: ServeProcess[] = [];
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});
afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop()));
  rmSync(dir, { recursive: true, force: true });
});

async function client(server: ServeProcess): Promise<Client> {
  const { client } = await connectHttp(server.url);
  clients.push(client);
  return client;
}

/** The first round of `charge_order`: the confirmation is asked. */
async function asked(c: Client, order: string, delayMs: number) {
  return expectInputRequired(await toolRound(c, { name: 'charge_order', arguments: { order, delayMs } }));
}

describe('durable steps across baton serve processes on one SQLite ledger', () => {
  beforeAll(async () => {
    const flags = ['--round-budget', '300', '--wait-in-call', '1'];
    servers.push(await startServe([...common, ...flags], env));
    servers.push(await startServe([...common, ...flags], env));
  }, 120_000);

  it('a replay storm on the step round runs the step once; a lost response gets the recorded result', {
    timeout: 60_000,
  }, async () => {
    const c = await client(servers[0]!);
    const d = await client(servers[1]!);
    const order = 'storm-1';
    const round = await confirmedRound(c, order, 0);
    // Sixteen identical retries at once, half on each instance.
    const storm = await Promise.allSettled(Array.from({ length: 16 }, (_, i) => toolRound(i % 2 ? d : c, round)));
    const answered = storm.flatMap((s) => (s.status === 'fulfilled' ? [textOf(s.value as { content?: unknown })] : []));
    expect(answered.length).toBeGreaterThanOrEqual(1);
    const [key] = effects(order)[0]!;
    for (const text of answered) expect(text).toBe(`Charged CH-${order}-${key.slice(0, 8)}`);
    // The rest were duplicates still in progress (-32000, retryable), never run, never `replayed`.
    for (const s of storm) if (s.status === 'rejected') expect(String(s.reason)).toMatch(/still in progress/);
    expect(effects(order)).toHaveLength(1);
    // The client never saw the answer: it retries the same state with the same answers, on either instance.
    for (const target of [c, d]) {
      const again = await toolRound(target, round);
      expect(textOf(again as { content?: unknown })).toBe(`Charged CH-${order}-${key.slice(0, 8)}`);
    }
    expect(effects(order)).toHaveLength(1);
  });

  it('a step slower than the round budget completes on a later round served by the other instance', {
    timeout: 60_000,
  }, async () => {
    const c = await client(servers[0]!);
    const d = await client(servers[1]!);
    const order = 'slow-1';
    const args = { order, delayMs: 2500 };
    const first = await asked(c, order, 2500);
    // The round budget (300 ms) and the call's wait (1 s) end while the step runs: "still working".
    const working = await toolRound(c, {
      name: 'charge_order',
      arguments: args,
      requestState: first.requestState,
      inputResponses: CONFIRM,
    });
    const { id, status } = (working as { structuredContent: { id: string; status: string } }).structuredContent;
    expect(status).toBe('working');
    expect(textOf(working as { content?: unknown })).toContain(`baton_resume {"id":"${id}"}`);
    expect(effects(order)).toHaveLength(1);
    const text = await continueUntilDone(d, id, 20_000);
    const [key, pid] = effects(order)[0]!;
    expect(text).toBe(`Charged CH-${order}-${key.slice(0, 8)}`);
    expect(pid).toBe(String(servers[0]!.child.pid)); // run by instance 0, delivered by instance 1
    expect(effects(order)).toHaveLength(1);
  });
});

describe('SIGKILL of the instance running a step', () => {
  const pair: ServeProcess[] = [];
  beforeAll(async () => {
    const flags = ['--round-budget', '300', '--wait-in-call', '1'];
    pair.push(await startServe([...common, ...flags], env));
    pair.push(await startServe([...common, ...flags], env));
  }, 120_000);
  afterAll(async () => {
    await Promise.all(pair.map((server) => server.stop()));
  });

  it('after the lease, the other instance runs it once more with the same idempotency key; the flow completes', {
    timeout: 90_000,
  }, async () => {
    const c = await client(pair[0]!);
    const d = await client(pair[1]!);
    const order = 'kill-1';
    const args = { order, delayMs: 3000 };
    const first = await asked(c, order, 3000);
    const working = await toolRound(c, {
      name: 'charge_order',
      arguments: args,
      requestState: first.requestState,
      inputResponses: CONFIRM,
    });
    const { id } = (working as { structuredContent: { id: string } }).structuredContent;
    expect(effects(order)).toHaveLength(1);
    pair[0]!.child.kill('SIGKILL');
    await pair[0]!.stop();

    const text = await continueUntilDone(d, id, 60_000);
    const runs = effects(order);
    expect(runs).toHaveLength(2);
    expect(runs[1]![0]).toBe(runs[0]![0]); // the same idempotency key
    expect(runs.map(([, pid]) => pid)).toEqual([String(pair[0]!.child.pid), String(pair[1]!.child.pid)]);
    expect(text).toBe(`Charged CH-${order}-${runs[0]![0].slice(0, 8)}`);
  });
});

describe('without a ledger', () => {
  it('the flow is left out with one line, or served with --allow-replays and a warning', {
    timeout: 60_000,
  }, async () => {
    const plain = await startServe(['test/fixtures/step-flows', '--http', '127.0.0.1:0', '--allow-replays'], env);
    try {
      expect(plain.stderr()).toMatch(/serving charge_order without a ledger \(--allow-replays\)/);
      const c = await client(plain);
      const first = await asked(c, 'plain-1', 0);
      const done = await toolRound(c, {
        name: 'charge_order',
        arguments: { order: 'plain-1', delayMs: 0 },
        requestState: first.requestState,
        inputResponses: CONFIRM,
      });
      expect(textOf(done as { content?: unknown })).toMatch(/^Charged CH-plain-1-/);
    } finally {
      await plain.stop();
    }
  });
});
