/**
 * Hostile JSON over real HTTP: raw JSON-RPC posts to `serveHttp` on
 * 127.0.0.1 (the official client will not serialise some of these) with
 * arguments and answers nested 10,000 levels deep or holding `1e400` (which
 * JSON parses to `Infinity`). Each gets JSON-RPC -32602 with a sentence
 * saying where the problem is, never -32603 "Internal error"; the server
 * keeps answering, and with a ledger the refused request consumes nothing:
 * the same flow instance completes with correct input afterwards.
 */
import { createFlowServerFactory, type HttpServing, serveHttp } from '@baton/adapters';
import { createRequestStateCodec, createRunner, type FullLedger, generateKey } from '@baton/engine';
import { createMemoryLedger } from '@baton/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import flows, { expose } from './fixtures/adapter-flows/index.js';

let serving: HttpServing;
let ledger: FullLedger;
const serverErrors: unknown[] = [];

beforeAll(async () => {
  ledger = createMemoryLedger();
  const runner = createRunner({ flows, ledger, codec: createRequestStateCodec({ keys: [generateKey()] }) });
  serving = await serveHttp({
    factory: createFlowServerFactory({ runner, expose, onError: (error: unknown) => serverErrors.push(error) }),
    host: '127.0.0.1',
    port: 0,
  });
});
afterAll(async () => {
  await serving?.close();
  await ledger?.close();
});

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
};

let nextId = 1;

/**
 * POST one JSON-RPC request whose `params` are spliced in as raw JSON text (so `1e400` and
 * 10,000-deep nesting reach the server exactly as written); resolves with the JSON-RPC answer.
 */
async function post(method: string, name: string, paramsJson: string): Promise<{ result?: any; error?: any }> {
  const id = nextId++;
  const body = `{"jsonrpc":"2.0","id":${id},"method":"${method}","params":{"_meta":${JSON.stringify(META)},${paramsJson}}}`;
  const response = await fetch(serving.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      'mcp-name': name,
    },
    body,
  });
  const text = await response.text();
  expect(response.status, text.slice(0, 500)).toBe(200);
  const answer = JSON.parse(text);
  expect(answer.id).toBe(id);
  return answer;
}

const call = (args: string, retry = '') =>
  post('tools/call', 'deploy_production', `"name":"deploy_production","arguments":${args}${retry}`);

const deepArray = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
const deepObject = (levels: number) => `${'{"x":'.repeat(levels)}1${'}'.repeat(levels)}`;

const CONFIRM = '{"action":"accept","content":{"confirm":true}}';
const TICKET = '{"action":"accept","content":{"ticket":"CHG-1"}}';

/** A fresh deploy_production instance: its first state. */
async function start(version: string): Promise<string> {
  const first = await call(`{"version":"${version}"}`);
  expect(first.result?.resultType).toBe('input_required');
  return first.result.requestState;
}

/** The retry that completes the instance: proves its state was not consumed. */
async function complete(version: string, requestState: string) {
  const done = await call(
    `{"version":"${version}"}`,
    `,"requestState":"${requestState}","inputResponses":{"confirm_deploy":${CONFIRM},"change_ticket":${TICKET}}`,
  );
  expect(done.error).toBeUndefined();
  expect(done.result.content).toEqual([{ type: 'text', text: `Deployed ${version} (ticket CHG-1)` }]);
}

describe('arguments nested 10,000 levels deep, or holding 1e400', () => {
  const cases: [string, string, RegExp][] = [
    ['an array', deepArray(10_000), /^arguments\.x is nested too deeply \(limit 64 levels\)$/],
    ['an object', deepObject(10_000), /^arguments\.x is nested too deeply \(limit 64 levels\)$/],
    ['1e400', '{"y":[1,1e400]}', /^arguments\.x\.y\[1\] holds a number that is not finite$/],
  ];

  it.each(cases)(
    'refuses %s in a first call with -32602 and a sentence; the server still serves',
    async (_what, x, message) => {
      const answer = await call(`{"version":"1.0.0","x":${x}}`);
      expect(answer.error).toMatchObject({ code: -32602, message: expect.stringMatching(message) });
      const requestState = await start('1.0.1');
      await complete('1.0.1', requestState);
    },
  );

  it.each(cases)(
    'refuses %s in a retry, before the state is redeemed; the same instance then completes',
    async (_what, x, message) => {
      const requestState = await start('1.1.0');
      const answer = await call(
        `{"version":"1.1.0","x":${x}}`,
        `,"requestState":"${requestState}","inputResponses":{"confirm_deploy":${CONFIRM},"change_ticket":${TICKET}}`,
      );
      expect(answer.error).toMatchObject({ code: -32602, message: expect.stringMatching(message) });
      await complete('1.1.0', requestState);
    },
  );

  it('refuses 1e400 as the argument the flow declares', async () => {
    const answer = await call('{"version":1e400}');
    expect(answer.error).toMatchObject({
      code: -32602,
      message: 'arguments.version holds a number that is not finite',
    });
  });
});

describe('inputResponses nested 10,000 levels deep, or holding 1e400', () => {
  const cases: [string, string, string][] = [
    [
      'an array',
      `{"action":"accept","content":{"confirm":true,"x":${deepArray(10_000)}}}`,
      'inputResponses.confirm_deploy.content is nested too deeply (limit 64 levels)',
    ],
    [
      'an object',
      `{"action":"accept","content":${deepObject(10_000)}}`,
      'inputResponses.confirm_deploy.content is nested too deeply (limit 64 levels)',
    ],
    [
      '1e400',
      '{"action":"accept","content":{"confirm":true,"x":1e400}}',
      'inputResponses.confirm_deploy.content.x holds a number that is not finite',
    ],
  ];

  it.each(cases)(
    'refuses %s with -32602 and a sentence; the same instance then completes',
    async (_what, answerJson, message) => {
      const requestState = await start('2.0.0');
      for (const responses of [
        `{"confirm_deploy":${answerJson},"change_ticket":${TICKET}}`,
        `{"confirm_deploy":${answerJson}}`,
      ]) {
        const answer = await call(
          '{"version":"2.0.0"}',
          `,"requestState":"${requestState}","inputResponses":${responses}`,
        );
        expect(answer.error).toEqual({ code: -32602, message });
      }
      await complete('2.0.0', requestState);
    },
  );

  it('refuses a hostile answer that reaches the answers through a __proto__ key', async () => {
    const requestState = await start('2.2.0');
    const hostile = `{"action":"accept","content":{"confirm":true,"x":${deepArray(10_000)}}}`;
    const answer = await call(
      '{"version":"2.2.0"}',
      `,"requestState":"${requestState}","inputResponses":{"__proto__":{"confirm_deploy":${hostile}}}`,
    );
    expect(answer.error).toMatchObject({ code: -32602 });
    expect(answer.error.message).toMatch(/nested too deeply \(limit 64 levels\)$/);
    await complete('2.2.0', requestState);
  });

  it('refuses a hostile answer under a key the state does not ask for, too', async () => {
    const requestState = await start('2.1.0');
    const answer = await call(
      '{"version":"2.1.0"}',
      `,"requestState":"${requestState}","inputResponses":{"unasked":{"deep":${deepArray(10_000)}}}`,
    );
    expect(answer.error).toEqual({
      code: -32602,
      message: 'inputResponses.unasked.deep is nested too deeply (limit 64 levels)',
    });
    await complete('2.1.0', requestState);
  });
});

describe('afterwards', () => {
  it('logged no internal error', () => {
    expect(serverErrors).toEqual([]);
  });
});

describe('params of the wrong type (the SDK validates them before any handler)', () => {
  const cases: [string, string, string, string][] = [
    [
      'prompts/get',
      'quick_approval',
      '"name":"quick_approval","arguments":{"x":5}',
      'Invalid params for prompts/get: arguments.x: Invalid input: expected string, received number',
    ],
    [
      'resources/read',
      'baton://flows/deploy_production',
      '"uri":5',
      'Invalid params for resources/read: uri: Invalid input: expected string, received number',
    ],
    [
      'tools/call',
      'deploy_production',
      '"name":"deploy_production","arguments":5',
      'Invalid params for tools/call: arguments: Invalid input: expected record, received number',
    ],
  ];

  it.each(cases)(
    '%s gets -32602 with a sentence, not -32603 with a JSON dump',
    async (method, name, params, message) => {
      const answer = await post(method, name, params);
      expect(answer.error).toEqual({ code: -32602, message });
      const requestState = await start('3.0.0');
      await complete('3.0.0', requestState);
    },
  );
});
