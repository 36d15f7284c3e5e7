/**
 * Durable steps of a flows module in a CommonJS package
 * (`test/fixtures/cjs-step-flows`, whose package.json says
 * `"type": "commonjs"`), served by real `baton serve` processes over HTTP and
 * called with the official SDK client, as `steps.e2e.test.ts` does for an
 * ES-module package. Such a module gets its own copy of `@baton/engine`
 * beside the runner's; its steps must still be durable. With `flows.ts` on
 * two instances sharing one SQLite ledger: a storm of identical retries runs
 * the step once and every answer (and a later retry) is the recorded one; two
 * instances of the flow get different idempotency keys; a step slower than
 * `--round-budget` answers "working" and completes on the other instance
 * without running again; SIGKILL of the instance running a step makes the
 * other run it again after the lease with the same key. `flows.js` (plain
 * `require`) with a ledger: a retry is not re-run, keys differ per instance.
 * Without a ledger, `--allow-replays` serves the flow, keyed per instance.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKey } from '@baton/engine';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectHttp, type ServeProcess, startServe, textOf, toolRound } from './helpers/mcpClients.js';
import { confirmedRound, continueUntilDone, stepEffects } from './helpers/stepFlows.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-cjs-steps-'));
const LOG = join(dir, 'side-effects.log');
writeFileSync(LOG, '');
const effects = (order: string) => stepEffects(LOG, order);
const env = { BATON_KEYS: generateKey(), BATON_STEP_LOG: LOG, BATON_STEP_LEASE_MS: '1000' };
const MODULE = 'test/fixtures/cjs-step-flows';
const http = ['--http', '127.0.0.1:0', '--round-budget', '300', '--wait-in-call', '1'];
/** `flows.ts` on two instances sharing a ledger, `flows.js` with its own, `flows.ts` without one. */
const ts: ServeProcess[] = [];
let js: ServeProcess;
let replays: ServeProcess;
const clients: Client[] = [];

beforeAll(async () => {
  const ledger = ['--ledger', `sqlite:${join(dir, 'ts.db')}`];
  [ts[0], ts[1], js, replays] = await Promise.all([
    startServe([`${MODULE}/flows.ts`, ...http, ...ledger], env),
    startServe([`${MODULE}/flows.ts`, ...http, ...ledger], env),
    startServe([`${MODULE}/flows.js`, ...http, '--ledger', `sqlite:${join(dir, 'js.db')}`], env),
    startServe([`${MODULE}/flows.ts`, ...http, '--allow-replays'], env),
  ]);
}, 120_000);
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});
afterAll(async () => {
  await Promise.all([...ts, js, replays].filter(Boolean).map((server) => server.stop()));
  rmSync(dir, { recursive: true, force: true });
});

async function client(server: ServeProcess): Promise<Client> {
  const { client } = await connectHttp(server.url);
  clients.push(client);
  return client;
}

/**
 * Send `round` `count` times at once over `targets` (round robin), then once more on each: the
 * step ran once, every answer is its result. Its idempotency key.
 */
async function stormRunsOnce(targets: Client[], round: Awaited<ReturnType<typeof confirmedRound>>, count: number) {
  const order = round.arguments.order;
  const before = effects(order).length;
  const storm = await Promise.allSettled(
    Array.from({ length: count }, (_, i) => toolRound(targets[i % targets.length]!, round)),
  );
  expect(effects(order)).toHaveLength(before + 1);
  const [key] = effects(order)[before]!;
  const charged = `Charged CH-${order}-${key.slice(0, 8)}`;
  const answered = storm.flatMap((s) => (s.status === 'fulfilled' ? [textOf(s.value as { content?: unknown })] : []));
  expect(answered.length).toBeGreaterThanOrEqual(1);
  for (const text of answered) expect(text).toBe(charged);
  // The others were refused (a replay, or a duplicate of a round still running), never run.
  for (const s of storm) {
    if (s.status === 'rejected') expect(String(s.reason)).toMatch(/Invalid or expired requestState|in progress/i);
  }
  // The client never saw an answer: it retries the same state, on every instance.
  for (const target of targets) expect(textOf((await toolRound(target, round)) as { content?: unknown })).toBe(charged);
  expect(effects(order)).toHaveLength(before + 1);
  return key;
}

describe('flows.ts in a CommonJS package, two instances on one SQLite ledger', () => {
  it('a storm of identical retries runs the step once; two instances of the flow get different keys', {
    timeout: 60_000,
  }, async () => {
    const c = await client(ts[0]!);
    const d = await client(ts[1]!);
    const first = await stormRunsOnce([c, d], await confirmedRound(c, 'ts-storm', 0), 16);
    const second = await stormRunsOnce([d, c], await confirmedRound(d, 'ts-storm', 0), 4);
    expect(second).not.toBe(first);
    expect(first).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('a step slower than the round budget answers "working" and completes on the other instance, run once', {
    timeout: 60_000,
  }, async () => {
    const c = await client(ts[0]!);
    const d = await client(ts[1]!);
    const working = await toolRound(c, await confirmedRound(c, 'ts-slow', 2500));
    const { id, status } = (working as { structuredContent: { id: string; status: string } }).structuredContent;
    expect(status).toBe('working');
    const text = await continueUntilDone(d, id, 20_000);
    const [key, pid] = effects('ts-slow')[0]!;
    expect(text).toBe(`Charged CH-ts-slow-${key.slice(0, 8)}`);
    expect(pid).toBe(String(ts[0]!.child.pid));
    expect(effects('ts-slow')).toHaveLength(1);
  });

  it('SIGKILL of the instance running the step: the other runs it again after the lease, same key', {
    timeout: 90_000,
  }, async () => {
    const c = await client(ts[0]!);
    const d = await client(ts[1]!);
    const working = await toolRound(c, await confirmedRound(c, 'ts-kill', 3000));
    const { id } = (working as { structuredContent: { id: string } }).structuredContent;
    expect(effects('ts-kill')).toHaveLength(1);
    ts[0]!.child.kill('SIGKILL');
    await ts[0]!.stop();
    const text = await continueUntilDone(d, id, 60_000);
    const runs = effects('ts-kill');
    expect(runs.map(([, pid]) => pid)).toEqual([String(ts[0]!.child.pid), String(ts[1]!.child.pid)]);
    expect(runs[1]![0]).toBe(runs[0]![0]);
    expect(text).toBe(`Charged CH-ts-kill-${runs[0]![0].slice(0, 8)}`);
  });
});

describe('flows.js (require) in a CommonJS package, with a ledger', () => {
  it('a retried round does not run the step again; two instances get different keys', { timeout: 60_000 }, async () => {
    const c = await client(js);
    const first = await stormRunsOnce([c], await confirmedRound(c, 'js-retry', 0), 4);
    const second = await stormRunsOnce([c], await confirmedRound(c, 'js-retry', 0), 1);
    expect(second).not.toBe(first);
  });
});

describe('flows.ts in a CommonJS package, without a ledger', () => {
  it('--allow-replays serves the flow; its step is keyed per instance', { timeout: 60_000 }, async () => {
    expect(replays.stderr()).toMatch(/serving charge_order without a ledger \(--allow-replays\)/);
    const c = await client(replays);
    for (let i = 0; i < 2; i++) {
      const done = await toolRound(c, await confirmedRound(c, 'replays', 0));
      expect(textOf(done as { content?: unknown })).toMatch(/^Charged CH-replays-/);
    }
    const keys = effects('replays').map(([key]) => key);
    expect(keys).toHaveLength(2);
    expect(keys[1]).not.toBe(keys[0]);
    for (const key of keys) expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });
});
