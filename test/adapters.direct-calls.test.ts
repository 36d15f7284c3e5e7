/**
 * The direct lane (`mcp/directToolCalls.ts`) answers the bytes the SDK would.
 * Two `serveHttp` servers on 127.0.0.1 serve the same runner (the adapter
 * fixture flows on one memory ledger): one with the lane, one without. Every
 * case sends the same raw HTTP request to both, each side's state coming from
 * its own previous answer, and compares status, content type and body with
 * the `requestState` strings masked (they are sealed with fresh nonces). Each
 * case also says whether the lane served it or handed it to the SDK, so a
 * lane that declined everything would fail here, and so would one that
 * served a request it must not.
 */
import {
  createDirectToolCalls,
  createFlowServerFactory,
  type DirectToolCalls,
  type HttpServing,
  serveHttp,
} from '@baton/adapters';
import { createKeyRing, createRequestStateCodec, createRunner, generateKey } from '@baton/engine';
import { createMemoryLedger } from '@baton/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import flows from './fixtures/adapter-flows/index.js';

const REVISION = '2026-07-28';
const FORM = { elicitation: { form: {} } };

let lane: HttpServing;
let sdk: HttpServing;
/** Whether the lane served each request sent to `lane` (true) or handed it to the SDK (false). */
const served: boolean[] = [];

beforeAll(async () => {
  const runner = createRunner({
    flows,
    ledger: createMemoryLedger(),
    codec: createRequestStateCodec({ keys: createKeyRing([generateKey()]) }),
  });
  const options = { runner };
  const direct = createDirectToolCalls(options);
  const recording: DirectToolCalls = (call) => {
    const answer = direct(call);
    served.push(answer !== undefined);
    return answer;
  };
  [lane, sdk] = await Promise.all([
    serveHttp({ factory: createFlowServerFactory(options), direct: recording, host: '127.0.0.1', port: 0 }),
    serveHttp({ factory: createFlowServerFactory(options), host: '127.0.0.1', port: 0 }),
  ]);
});
afterAll(async () => {
  await Promise.all([lane?.close(), sdk?.close()]);
});

interface Call {
  readonly name: string;
  readonly arguments?: unknown;
  readonly capabilities?: object;
  readonly inputResponses?: unknown;
  readonly requestState?: unknown;
  readonly meta?: object;
  readonly id?: string | number;
  readonly headers?: Record<string, string | undefined>;
}

/** A 2026-07-28 `tools/call` body as the official client sends it. */
function body(call: Call): Record<string, unknown> {
  return {
    method: 'tools/call',
    params: {
      name: call.name,
      ...(call.arguments !== undefined ? { arguments: call.arguments } : {}),
      ...(call.inputResponses !== undefined ? { inputResponses: call.inputResponses } : {}),
      ...(call.requestState !== undefined ? { requestState: call.requestState } : {}),
      _meta: {
        'io.modelcontextprotocol/protocolVersion': REVISION,
        'io.modelcontextprotocol/clientInfo': { name: 'direct-test', version: '1.0.0' },
        'io.modelcontextprotocol/clientCapabilities': call.capabilities ?? FORM,
        ...call.meta,
      },
    },
    jsonrpc: '2.0',
    id: call.id ?? 1,
  };
}

interface Answer {
  readonly status: number;
  readonly type: string | null;
  readonly text: string;
  /** The answer's requestState, when it has one. */
  readonly state?: string;
}

async function post(serving: HttpServing, payload: unknown, headers: Record<string, string | undefined>) {
  const response = await fetch(serving.url, {
    method: 'POST',
    headers: Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== undefined)) as Record<string, string>,
    body: JSON.stringify(payload),
  });
  const text = await response.text();
  const state = /"requestState":"([^"]+)"/.exec(text)?.[1];
  return {
    status: response.status,
    type: response.headers.get('content-type'),
    text: text.replace(/"requestState":"[^"]+"/g, '"requestState":"<sealed>"'),
    ...(state ? { state } : {}),
  } satisfies Answer;
}

const headersOf = (call: Call) => ({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': REVISION,
  'mcp-method': 'tools/call',
  'mcp-name': call.name,
  ...call.headers,
});

/**
 * Send `make(side's state)` to both servers; expect the same answer, and the lane to have served
 * it or not. `state` is each side's state to build on (from an earlier case), by side.
 */
async function same(
  make: (state: string | undefined) => Call | { raw: unknown; headers: Record<string, string> },
  expected: { direct: boolean },
  state: { lane?: string; sdk?: string } = {},
): Promise<{ lane: Answer; sdk: Answer }> {
  const send = (serving: HttpServing, own: string | undefined) => {
    const call = make(own);
    return 'raw' in call ? post(serving, call.raw, call.headers) : post(serving, body(call), headersOf(call));
  };
  const before = served.length;
  const viaLane = await send(lane, state.lane);
  const viaSdk = await send(sdk, state.sdk);
  expect(served.slice(before)).toEqual(served.length > before ? [expected.direct] : []);
  if (served.length === before) expect(expected.direct).toBe(false);
  expect({ status: viaLane.status, type: viaLane.type, text: viaLane.text }).toEqual({
    status: viaSdk.status,
    type: viaSdk.type,
    text: viaSdk.text,
  });
  return { lane: viaLane, sdk: viaSdk };
}

const states = (answers: { lane: Answer; sdk: Answer }) => ({ lane: answers.lane.state, sdk: answers.sdk.state });
const deploy = (version = '1.2.3') => ({ name: 'deploy_production', arguments: { version } });
const bothAnswers = {
  confirm_deploy: { action: 'accept', content: { confirm: true } },
  change_ticket: { action: 'accept', content: { ticket: 'CHG-42' } },
};

describe('the direct lane answers as the SDK does', () => {
  it('serves a whole flow: its input_required round, the answered round, and the replay refused', async () => {
    const first = await same(() => deploy(), { direct: true });
    expect(first.lane.text).toContain('"resultType":"input_required"');
    const second = await same(
      (state) => ({ ...deploy(), inputResponses: bothAnswers, requestState: state }),
      { direct: true },
      states(first),
    );
    expect(second.lane.text).toContain('Deployed 1.2.3 (ticket CHG-42)');
    expect(second.lane.text).toContain('"io.modelcontextprotocol/serverInfo":{"name":"baton","version":"0.1.0"}');
    // The same request again (a client's retry) and the state with other answers: redeemed once already.
    await same(
      (state) => ({ ...deploy(), inputResponses: bothAnswers, requestState: state }),
      { direct: true },
      states(first),
    );
    const other = { ...bothAnswers, change_ticket: { action: 'accept', content: { ticket: 'CHG-43' } } };
    await same(
      (state) => ({ ...deploy(), inputResponses: other, requestState: state }),
      { direct: true },
      states(first),
    );
  });

  it('serves a declined answer, a tampered state, a flow error and a string id', async () => {
    const first = await same(() => ({ ...deploy('2.0.0'), id: 'call-7' }), { direct: true });
    await same(
      (state) => ({
        ...deploy('2.0.0'),
        inputResponses: { confirm_deploy: { action: 'decline' } },
        requestState: state,
      }),
      { direct: true },
      states(first),
    );
    const tampered = await same(
      (state) => ({ ...deploy('2.0.0'), inputResponses: bothAnswers, requestState: `${state!.slice(0, -4)}AAAA` }),
      { direct: true },
      states(first),
    );
    expect(tampered.lane.text).toMatch(/"code":-32602.*"reason"/);
    const broken = await same(() => deploy('broken'), { direct: true });
    expect(broken.lane.text).toContain('No build exists');
  });

  it('serves structured output and other input kinds, and -32021 (HTTP 400) for one the client did not declare', async () => {
    const capabilities = { ...FORM, roots: {}, sampling: {} };
    const first = await same(() => ({ name: 'draft_notes', capabilities }), { direct: true });
    const listed = await same(
      (state) => ({
        name: 'draft_notes',
        capabilities,
        inputResponses: { workspace: { roots: [{ uri: 'file:///repo' }] } },
        requestState: state,
      }),
      { direct: true },
      states(first),
    );
    const done = await same(
      (state) => ({
        name: 'draft_notes',
        capabilities,
        inputResponses: { draft: { role: 'assistant', content: { type: 'text', text: 'Notes.' }, model: 'm' } },
        requestState: state,
      }),
      { direct: true },
      states(listed),
    );
    expect(done.lane.text).toContain('"structuredContent"');
    const undeclared = await same(() => ({ name: 'draft_notes', capabilities: FORM }), { direct: true });
    expect(undeclared.lane.status).toBe(400);
    expect(undeclared.lane.text).toContain('-32021');
  });

  it('serves arguments its schema lets through, and the round refuses them as on the SDK path', async () => {
    const missing = await same(() => ({ name: 'deploy_production', arguments: {} }), { direct: true });
    expect(missing.lane.text).toContain('Invalid arguments: version');
    await same(() => ({ name: 'deploy_production', arguments: { version: 7 } }), { direct: true });
  });

  it('hands the SDK every request it cannot be sure of, and the SDK answers it', async () => {
    const cases: ((state: string | undefined) => Call | { raw: unknown; headers: Record<string, string> })[] = [
      () => ({ ...deploy(), requestState: 42 }),
      () => ({ ...deploy(), headers: { 'mcp-name': undefined } }),
      () => ({ ...deploy(), headers: { 'mcp-name': 'quick_approval' } }),
      () => ({ ...deploy(), headers: { 'mcp-protocol-version': undefined } }),
      () => ({ ...deploy(), headers: { 'content-type': 'text/plain' } }),
      () => ({ name: 'no_such_tool', headers: { 'mcp-name': 'no_such_tool' } }),
      () => ({ ...deploy(), meta: { progressToken: 'p-1' } }),
      () => ({ ...deploy(), meta: { 'io.modelcontextprotocol/clientInfo': 5 } }),
      () => ({ ...deploy(), capabilities: { elicitation: 'yes' } }),
      () => ({ ...deploy(), meta: { 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } }),
      () => ({ ...deploy(), capabilities: { ...FORM, extensions: { 'io.modelcontextprotocol/tasks': {} } } }),
      () => ({ ...deploy(), inputResponses: { confirm_deploy: { method: 'elicitation/create', result: {} } } }),
      () => ({ ...deploy(), inputResponses: [] }),
      () => ({ raw: [body(deploy())], headers: headersOf(deploy()) }),
      () => ({ raw: { ...body(deploy()), extra: true }, headers: headersOf(deploy()) }),
    ];
    for (const [index, make] of cases.entries()) {
      await same(make, { direct: false }).catch((error: Error) => {
        throw new Error(`case ${index}: ${error.message}`);
      });
    }
  });
});
