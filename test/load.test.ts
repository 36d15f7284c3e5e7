/**
 * Load test (bounded, loopback only): two `baton serve examples/approvals`
 * processes sharing `BATON_KEYS` and one SQLite ledger file; 200 concurrent
 * official-SDK clients each run `deploy_production` in two rounds or in
 * three (one answer per round) with manual rounds, every round
 * going to the other process than the one before. Then two replay storms:
 * the same unused `grant_temporary_access` state sent by 20 clients at once
 * (redeemed exactly once: one code is ever issued; the others are held while
 * the first is in flight and get its recorded outcome, or the retryable
 * -32000 `in_progress`, never -32602 `replayed`), and the same already-used
 * `deploy_production` state sent by 20 clients at once (the recorded
 * outcome). Prints p50/p99 round latency.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKey } from '@baton/engine';
import { type Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  expectInputRequired,
  newClient,
  protocolError,
  type ServeProcess,
  startServe,
  textOf,
  toolRound,
} from './helpers/mcpClients.js';

const CLIENTS = 200;
const STORM = 20;

let dir: string;
const servers: ServeProcess[] = [];
const clients: Client[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'baton-load-'));
  const env = { BATON_KEYS: generateKey() };
  const args = ['examples/approvals', '--http', '127.0.0.1:0', '--ledger', `sqlite:${join(dir, 'ledger.db')}`];
  servers.push(...(await Promise.all([startServe(args, env), startServe(args, env)])));
});

afterAll(async () => {
  await Promise.allSettled(clients.splice(0).map((client) => client.close()));
  await Promise.allSettled(servers.map((server) => server.stop()));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/**
 * A client whose `tools/call` requests alternate between the two servers,
 * starting with `first`; other requests (initialize, notifications) go to
 * `first`. `targets` records where each tools/call went.
 */
async function alternatingClient(first = 0): Promise<{ client: Client; targets: number[] }> {
  const urls = servers.map((server) => server.url);
  const targets: number[] = [];
  let calls = first;
  const fetchFn = async (_input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const body = typeof init?.body === 'string' ? (JSON.parse(init.body) as { method?: string }) : undefined;
    let index = first % urls.length;
    if (body?.method === 'tools/call') {
      index = calls++ % urls.length;
      targets.push(index);
    }
    return fetch(urls[index]!, init);
  };
  const { client } = newClient({ capabilities: { elicitation: { form: {} } } });
  clients.push(client);
  await client.connect(new StreamableHTTPClientTransport(urls[first % urls.length]!, { fetch: fetchFn }));
  return { client, targets };
}

const accept = (content: Record<string, unknown>) => ({ action: 'accept', content });
const latencies: number[] = [];

/** One timed manual round. */
async function round(client: Client, params: Parameters<typeof toolRound>[1]) {
  const start = performance.now();
  const result = await toolRound(client, params);
  latencies.push(performance.now() - start);
  return result;
}

function completedText(result: unknown): string {
  const r = result as { resultType?: string; isError?: boolean };
  expect(r.resultType ?? 'complete').toBe('complete');
  expect(r.isError).toBeFalsy();
  return textOf(r as { content?: unknown });
}

async function deployFlow(client: Client, i: number): Promise<string> {
  const call = { name: 'deploy_production', arguments: { version: `9.${i}.0` } };
  const first = expectInputRequired(await round(client, call));
  const done = await round(client, {
    ...call,
    requestState: first.requestState,
    inputResponses: { confirm_deploy: accept({ confirm: true }), change_ticket: accept({ ticket: `CHG-${i}` }) },
  });
  const text = completedText(done);
  expect(text).toBe(`Deployed 9.${i}.0 to production (change ticket CHG-${i}).`);
  return first.requestState;
}

/**
 * Three rounds of one person (`expense_approval` is decided by others since issue 13, and its
 * requester's rounds wait on them): a deployment answered one question per round, the missing
 * one asked again with the answer received held in the state.
 */
async function deployInThreeRounds(client: Client, i: number): Promise<void> {
  const call = { name: 'deploy_production', arguments: { version: `8.${i}.0` } };
  const first = expectInputRequired(await round(client, call));
  const second = expectInputRequired(
    await round(client, {
      ...call,
      requestState: first.requestState,
      inputResponses: { confirm_deploy: accept({ confirm: true }) },
    }),
  );
  expect(Object.keys(second.inputRequests ?? {})).toEqual(['change_ticket']);
  const done = await round(client, {
    ...call,
    requestState: second.requestState,
    inputResponses: { change_ticket: accept({ ticket: `CHG-${i}` }) },
  });
  expect(completedText(done)).toBe(`Deployed 8.${i}.0 to production (change ticket CHG-${i}).`);
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

/** Send the identical round from `STORM` clients at once; the successes' texts and the errors. */
async function storm(params: Parameters<typeof toolRound>[1]) {
  const stormClients = await Promise.all(Array.from({ length: STORM }, (_, i) => alternatingClient(i)));
  const settled = await Promise.allSettled(stormClients.map(({ client }) => toolRound(client, params)));
  const texts: string[] = [];
  const errors: { code: number; message: string; data: unknown }[] = [];
  for (const outcome of settled) {
    if (outcome.status === 'fulfilled') texts.push(completedText(outcome.value));
    else errors.push(await protocolError(Promise.reject(outcome.reason)));
  }
  return { texts, errors };
}

describe('load: two baton serve processes, one SQLite ledger', () => {
  let usedDeployState = '';

  it(`${CLIENTS} concurrent clients complete every flow, rounds alternating between the processes`, async () => {
    const started = performance.now();
    const runs = await Promise.all(
      Array.from({ length: CLIENTS }, async (_, i) => {
        const { client, targets } = await alternatingClient(i);
        if (i % 2 === 0) {
          const state = await deployFlow(client, i);
          if (i === 0) usedDeployState = state;
        } else {
          await deployInThreeRounds(client, i);
        }
        return targets;
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    for (const targets of runs) {
      for (let k = 1; k < targets.length; k++) expect(targets[k]).not.toBe(targets[k - 1]);
    }
    expect(latencies).toHaveLength((CLIENTS / 2) * 2 + (CLIENTS / 2) * 3);
    const sorted = [...latencies].sort((a, b) => a - b);
    console.log(
      `load: ${CLIENTS} flows, ${latencies.length} rounds in ${seconds.toFixed(1)} s; ` +
        `round latency p50 ${percentile(sorted, 50).toFixed(1)} ms, p99 ${percentile(sorted, 99).toFixed(1)} ms`,
    );
  });

  it(`replay storm on an unused state: ${STORM} identical rounds, redeemed exactly once`, async () => {
    const { client } = await alternatingClient(0);
    const call = { name: 'grant_temporary_access', arguments: { resource: 'db-load', minutes: 5 } };
    const first = expectInputRequired(await toolRound(client, call));
    const params = {
      ...call,
      requestState: first.requestState,
      inputResponses: { approval: accept({ approve: true }) },
    };
    const { texts, errors } = await storm(params);
    expect(texts.length + errors.length).toBe(STORM);
    expect(texts.length).toBeGreaterThanOrEqual(1);
    for (const error of errors) {
      expect(error).toEqual({
        code: -32000,
        message: 'Round still in progress, retry the same request later',
        data: { reason: 'in_progress', retryAfterMs: 1000 },
      });
    }
    // Every fresh redemption mints a new code: one distinct code means one redemption.
    const codes = new Set(texts.map((text) => /One-time code: (\S+)/.exec(text)?.[1]));
    expect(codes.size).toBe(1);
    const [code] = [...codes];
    expect(code).toBeTruthy();
    // Once recorded, the identical round is answered with the recorded outcome, on either process.
    const again = await storm(params);
    expect(again.errors).toEqual([]);
    expect(new Set(again.texts)).toEqual(new Set([texts[0]]));
    // The single code redeems once.
    const redeemed = completedText(await toolRound(client, { name: 'redeem_access_code', arguments: { code: code! } }));
    expect(redeemed).toContain('accepted');
    console.log(`replay storm (unused state): ${texts.length} answered, ${errors.length} x -32000 in_progress, 1 code`);
  });

  it(`replay storm on a used state: ${STORM} identical rounds get the recorded outcome`, async () => {
    expect(usedDeployState).not.toBe('');
    const { texts, errors } = await storm({
      name: 'deploy_production',
      arguments: { version: '9.0.0' },
      requestState: usedDeployState,
      inputResponses: { confirm_deploy: accept({ confirm: true }), change_ticket: accept({ ticket: 'CHG-0' }) },
    });
    expect(errors).toEqual([]);
    expect(texts).toHaveLength(STORM);
    expect(new Set(texts)).toEqual(new Set(['Deployed 9.0.0 to production (change ticket CHG-0).']));
    // Other answers for the used state are replays.
    const { client } = await alternatingClient(1);
    const replay = await protocolError(
      toolRound(client, {
        name: 'deploy_production',
        arguments: { version: '9.0.0' },
        requestState: usedDeployState,
        inputResponses: { confirm_deploy: accept({ confirm: false }), change_ticket: accept({ ticket: 'CHG-0' }) },
      }),
    );
    expect(replay).toEqual({ code: -32602, message: 'Invalid or expired requestState', data: { reason: 'replayed' } });
  });
});
