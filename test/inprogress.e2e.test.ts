/**
 * Duplicates of a round still in progress, end to end: two `baton serve`
 * processes over HTTP (loopback) on one ledger (a real SQLite file, and a real
 * PostgreSQL database), the official SDK client, and the durable step of
 * `test/fixtures/step-flows`, which appends a line to a file this test owns
 * each time it starts. A storm of 16 identical rounds (the same requestState
 * and answers) against a 400 ms step, spread over both instances, gets the
 * recorded outcome or the retryable -32000 `in_progress`, never -32602
 * `replayed`, and the step runs once; a duplicate of a round that outlives
 * the hold gets -32000 `in_progress` with `retryAfterMs`, and its retry the
 * recorded outcome; the state of a finished round presented with other
 * answers is `replayed`. Every wait is bounded and generous.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKey } from '@baton/engine';
import { type Client, ProtocolError } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestDatabase } from '../packages/store/test/helpers/postgres.js';
import {
  connectHttp,
  expectInputRequired,
  protocolError,
  type ServeProcess,
  sleep,
  startServe,
  textOf,
  toolRound,
} from './helpers/mcpClients.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-inprogress-e2e-'));
const LOG = join(dir, 'side-effects.log');
writeFileSync(LOG, '');
const env = { BATON_KEYS: generateKey(), BATON_STEP_LOG: LOG };
const CONFIRM = { confirm: { action: 'accept', content: { confirm: true } } };
const IN_PROGRESS = {
  code: -32000,
  message: 'Round still in progress, retry the same request later',
  data: { reason: 'in_progress', retryAfterMs: 1000 },
};

const servers: ServeProcess[] = [];
const clients: Client[] = [];
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.close()));
  await Promise.allSettled(servers.map((server) => server.stop()));
  for (const cleanup of cleanups) await cleanup().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
});

/** The side effects of `order`: one line per execution of its step. */
const effects = (order: string) =>
  readFileSync(LOG, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith(`${order} `));

/** A round's answer: its text, or the JSON-RPC error it got. */
async function answer(call: Promise<unknown>): Promise<string | { code: number; message: string; data: unknown }> {
  try {
    return textOf((await call) as { content?: unknown });
  } catch (error) {
    if (!(error instanceof ProtocolError)) throw error;
    return { code: error.code, message: error.message, data: error.data };
  }
}

const pgUrl = inject('batonPgUrl');
const LEDGERS: [string, () => Promise<string>][] = [
  ['SQLite', async () => `sqlite:${join(dir, 'ledger.db')}`],
  ...(pgUrl
    ? [
        [
          'PostgreSQL',
          async () => {
            const database = await createTestDatabase(pgUrl);
            cleanups.push(database.drop);
            return database.url;
          },
        ] as [string, () => Promise<string>],
      ]
    : []),
];

describe.each(LEDGERS)('duplicates of a round in progress, two baton serve on %s', (name, ledgerUrl) => {
  let c: Client;
  let d: Client;
  beforeAll(async () => {
    const url = await ledgerUrl();
    // A 300 ms round budget: the first round holds (up to 5 s) for a slower step, and a
    // duplicate is held for the budget plus a second.
    const args = ['test/fixtures/step-flows', '--http', '127.0.0.1:0', '--ledger', url];
    const flags = ['--round-budget', '300', '--wait-in-call', '5'];
    const pair = await Promise.all([startServe([...args, ...flags], env), startServe([...args, ...flags], env)]);
    servers.push(...pair);
    c = (await connectHttp(pair[0]!.url)).client;
    d = (await connectHttp(pair[1]!.url)).client;
    clients.push(c, d);
  }, 120_000);

  it('a storm of 16 identical rounds against a 400 ms step: the recorded outcome or in_progress, never replayed', {
    timeout: 90_000,
  }, async () => {
    const order = `storm-${name}`;
    const args = { order, delayMs: 400 };
    const first = expectInputRequired(await toolRound(c, { name: 'charge_order', arguments: args }));
    const round = { name: 'charge_order', arguments: args, requestState: first.requestState, inputResponses: CONFIRM };
    const storm = await Promise.all(Array.from({ length: 16 }, (_, i) => answer(toolRound(i % 2 ? d : c, round))));
    const texts = storm.filter((a): a is string => typeof a === 'string');
    const errors = storm.filter((a) => typeof a !== 'string');
    expect(texts.length).toBeGreaterThanOrEqual(1);
    const [outcome] = texts;
    expect(outcome).toMatch(new RegExp(`^Charged CH-${order}-`));
    for (const text of texts) expect(text).toBe(outcome);
    for (const error of errors) expect(error).toEqual(IN_PROGRESS);
    expect(effects(order)).toHaveLength(1);
    // Retried (as a client refused with in_progress does), every instance answers the recorded outcome.
    for (const target of [c, d]) expect(await answer(toolRound(target, round))).toBe(outcome);
    // The finished round's state with other answers is a replay.
    const other = { ...round, inputResponses: { confirm: { action: 'accept', content: { confirm: false } } } };
    expect(await protocolError(toolRound(d, other))).toEqual({
      code: -32602,
      message: 'Invalid or expired requestState',
      data: { reason: 'replayed' },
    });
    expect(effects(order)).toHaveLength(1);
    console.log(`${name} storm: ${texts.length} x the outcome, ${errors.length} x in_progress`);
  });

  it('a duplicate of a round that outlives the hold gets -32000 in_progress, and its retry the outcome', {
    timeout: 90_000,
  }, async () => {
    const order = `slow-${name}`;
    const args = { order, delayMs: 3000 };
    const first = expectInputRequired(await toolRound(c, { name: 'charge_order', arguments: args }));
    const round = { name: 'charge_order', arguments: args, requestState: first.requestState, inputResponses: CONFIRM };
    const running = answer(toolRound(c, round));
    await sleep(200);
    // Held for the budget plus a second (1.3 s), while the first round waits on its 3 s step.
    const duplicate = await answer(toolRound(d, round));
    expect(duplicate).toEqual(IN_PROGRESS);
    const outcome = await running;
    expect(outcome).toMatch(new RegExp(`^Charged CH-${order}-`));
    let retried = duplicate;
    for (let i = 0; i < 20 && typeof retried !== 'string'; i++) {
      await sleep(IN_PROGRESS.data.retryAfterMs);
      retried = await answer(toolRound(d, round));
    }
    expect(retried).toBe(outcome);
    expect(effects(order)).toHaveLength(1);
  });
});
