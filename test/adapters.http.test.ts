/**
 * Flows served in-process by `serveHttp` on 127.0.0.1 and called by the
 * official SDK client over real HTTP on the 2026-07-28 wire: listings,
 * parallel requests in one round, several rounds, a missing response
 * re-asked, a decline, tampered and foreign states (-32602), capabilities,
 * prompts, resources, and a durable deadline.
 */
import { createFlowServerFactory, type HttpServing, registerFlows, serveHttp } from '@baton/adapters';
import {
  createKeyRing,
  createRequestStateCodec,
  createRunner,
  defineFlow,
  defineInputs,
  generateKey,
} from '@baton/engine';
import type { Client } from '@modelcontextprotocol/client';
import { McpServer, ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { setup } from 'xstate';
import { z } from 'zod';
import flows, { expose } from './fixtures/adapter-flows/index.js';
import {
  connectHttp,
  expectInputRequired,
  protocolError,
  textOf,
  toolRound,
  type WireLeg,
} from './helpers/mcpClients.js';

let serving: HttpServing;
const clients: Client[] = [];

/**
 * The runner's and codec's clock: it moves only when a test moves it, so `quick_approval`'s
 * one-second deadline fires when a test says so, never because a busy machine was slow.
 */
let clock = Date.now();
const now = () => clock;

beforeAll(async () => {
  const runner = createRunner({
    flows,
    now,
    codec: createRequestStateCodec({ keys: createKeyRing([generateKey()]), now }),
  });
  serving = await serveHttp({ factory: createFlowServerFactory({ runner, expose }), host: '127.0.0.1', port: 0 });
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});
afterAll(async () => {
  await serving.close();
});

async function connect(options: Parameters<typeof connectHttp>[1] = {}) {
  const connected = await connectHttp(serving.url, options);
  clients.push(connected.client);
  return connected;
}

const toolLegs = (legs: WireLeg[]) => legs.filter((leg) => leg.request?.method === 'tools/call');

describe('listings', () => {
  it('lists flows as tools with their schema, description and annotations', async () => {
    const { client } = await connect();
    const { tools } = await client.listTools();
    const deploy = tools.find((tool) => tool.name === 'deploy_production')!;
    expect(deploy).toMatchObject({
      title: 'Deploy to production',
      description: 'Deploy a version to production after a confirmation and a change ticket.',
      annotations: { destructiveHint: true, openWorldHint: false },
      inputSchema: {
        type: 'object',
        properties: { version: { type: 'string', minLength: 1, description: 'The version to deploy' } },
        required: ['version'],
      },
    });
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      'deploy_production',
      'draft_notes',
      'link_account',
      'quick_approval',
    ]);
  });

  it('lists the opted-in prompts and resource templates', async () => {
    const { client } = await connect();
    const { prompts } = await client.listPrompts();
    expect(prompts.map((p) => p.name).sort()).toEqual(['draft_notes', 'quick_approval']);
    expect(prompts.find((p) => p.name === 'quick_approval')!.arguments).toEqual([{ name: 'amount', required: true }]);
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates).toEqual([
      expect.objectContaining({ name: 'deploy_production', uriTemplate: 'baton://flows/deploy_production{?version}' }),
    ]);
  });
});

describe('tools over the 2026-07-28 wire', () => {
  it('asks two questions in one round and completes on the retry, echoing the state byte for byte', async () => {
    const { client, log, legs } = await connect();
    const result = await client.callTool({ name: 'deploy_production', arguments: { version: '1.2.3' } });
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toBe('Deployed 1.2.3 (ticket CHG-7)');
    expect(log.asked).toEqual([
      'elicit:Deploy 1.2.3 to production? Plan: rolling update to 1.2.3 on 3 nodes',
      'elicit:Change ticket for this deployment?',
    ]);

    const [first, second] = toolLegs(legs);
    expect(toolLegs(legs)).toHaveLength(2);
    const firstResult = JSON.parse(first!.response).result;
    expect(firstResult.resultType).toBe('input_required');
    expect(Object.keys(firstResult.inputRequests)).toEqual(['confirm_deploy', 'change_ticket']);
    expect(firstResult.inputRequests.confirm_deploy).toMatchObject({
      method: 'elicitation/create',
      params: { mode: 'form', requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' } } } },
    });
    expect(second!.request!.params!.requestState).toBe(firstResult.requestState);
    expect(second!.request!.id).not.toEqual(first!.request!.id);
    expect(Object.keys(second!.request!.params!.inputResponses as object).sort()).toEqual([
      'change_ticket',
      'confirm_deploy',
    ]);
    expect(JSON.parse(second!.response).result).toMatchObject({ resultType: 'complete', content: [{ type: 'text' }] });
  });

  it('runs several rounds: roots, then sampling', async () => {
    const { client, log, legs } = await connect();
    const result = await client.callTool({ name: 'draft_notes', arguments: {} });
    expect(result.structuredContent).toEqual({ roots: ['file:///repo'], notes: 'Fixed bugs.' });
    expect(log.asked).toEqual(['roots', 'sampling']);
    expect(toolLegs(legs)).toHaveLength(3);
  });

  it('ends the flow (not an error) when the user declines', async () => {
    const { client } = await connect({ elicit: () => ({ action: 'decline' }) });
    const result = await client.callTool({ name: 'deploy_production', arguments: { version: '2.0.0' } });
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toBe('Deployment of 2.0.0 cancelled');
  });

  it('re-asks only a missing response, keeping the one received', async () => {
    const { client } = await connect();
    const call = { name: 'deploy_production', arguments: { version: '3.0.0' } };
    const first = expectInputRequired(await toolRound(client, call));
    const second = expectInputRequired(
      await toolRound(client, {
        ...call,
        requestState: first.requestState,
        inputResponses: { confirm_deploy: { action: 'accept', content: { confirm: true } } },
      }),
    );
    expect(Object.keys(second.inputRequests ?? {})).toEqual(['change_ticket']);
    expect(second.requestState).not.toBe(first.requestState);
    const done = await toolRound(client, {
      ...call,
      requestState: second.requestState,
      inputResponses: { change_ticket: { action: 'accept', content: { ticket: 'CHG-9' } } },
    });
    expect(textOf(done as { content: unknown })).toBe('Deployed 3.0.0 (ticket CHG-9)');
  });

  it('answers a tampered state with -32602 and the reason, never a re-prompt', async () => {
    const { client } = await connect();
    const call = { name: 'deploy_production', arguments: { version: '4.0.0' } };
    const first = expectInputRequired(await toolRound(client, call));
    const s = first.requestState;
    const tampered = s.slice(0, 30) + (s[30] === 'A' ? 'B' : 'A') + s.slice(31);
    const error = await protocolError(
      toolRound(client, { ...call, requestState: tampered, inputResponses: { confirm_deploy: { action: 'decline' } } }),
    );
    expect(error).toEqual({
      code: -32602,
      message: 'Invalid or expired requestState',
      data: { reason: 'bad_integrity' },
    });
  });

  it('rejects a state replayed with other arguments or for another flow', async () => {
    const { client } = await connect();
    const first = expectInputRequired(
      await toolRound(client, { name: 'deploy_production', arguments: { version: '5.0.0' } }),
    );
    const otherArgs = await protocolError(
      toolRound(client, {
        name: 'deploy_production',
        arguments: { version: '6.6.6' },
        requestState: first.requestState,
        inputResponses: {},
      }),
    );
    expect(otherArgs).toMatchObject({ code: -32602, data: { reason: 'bad_integrity' } });
    const otherFlow = await protocolError(
      toolRound(client, { name: 'link_account', arguments: {}, requestState: first.requestState, inputResponses: {} }),
    );
    expect(otherFlow).toMatchObject({ code: -32602, message: 'Invalid or expired requestState' });
  });

  it('reports invalid arguments and flow failures as tool errors', async () => {
    const { client } = await connect();
    const invalid = await client.callTool({ name: 'deploy_production', arguments: { version: '' } });
    expect(invalid.isError).toBe(true);
    expect(textOf(invalid)).toMatch(/^Invalid arguments: version: /);
    const broken = await client.callTool({ name: 'deploy_production', arguments: { version: 'broken' } });
    expect(broken).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: 'No build exists for version "broken".' }],
    });
  });

  it('fires a durable deadline that passed while the user was answering', async () => {
    const { client } = await connect({
      elicit: async () => {
        clock += 1300; // the user took 1.3 s to answer a question with a one-second deadline
        return { action: 'accept', content: { ok: true } };
      },
    });
    const result = await client.callTool({ name: 'quick_approval', arguments: { amount: 5 } });
    expect(textOf(result)).toBe('Approval of 5 timed out');
  });
});

describe('client capabilities', () => {
  it('takes the declared fallback when the client cannot sample', async () => {
    const { client, log } = await connect({ capabilities: { roots: {}, elicitation: {} } });
    const result = await client.callTool({ name: 'draft_notes', arguments: {} });
    expect(result.structuredContent).toEqual({ roots: ['file:///repo'], notes: 'no model available: template used' });
    expect(log.asked).toEqual(['roots']);
  });

  it('never sends a URL elicitation to a client that declared form mode only: -32021 with HTTP 400 (SEP-2575)', async () => {
    const { client, log, legs } = await connect({ capabilities: { elicitation: {} } });
    const refused = await protocolError(client.callTool({ name: 'link_account', arguments: {} }));
    expect(refused).toMatchObject({
      code: -32021,
      message: expect.stringContaining('url input'),
      data: { requiredCapabilities: { elicitation: { url: {} } } },
    });
    expect(toolLegs(legs).map((leg) => leg.status)).toEqual([400]);
    expect(log.asked).toEqual([]);
  });

  it('sends a URL elicitation to a client that declared it', async () => {
    const { client, log } = await connect();
    expect(textOf(await client.callTool({ name: 'link_account', arguments: {} }))).toBe('Account linked');
    expect(log.asked).toEqual(['elicit:Sign in to link your account']);
  });
});

describe('prompts and resources', () => {
  it('serves a flow as a prompt, converting string arguments to the schema types', async () => {
    const { client, log } = await connect();
    const prompt = await client.getPrompt({ name: 'quick_approval', arguments: { amount: '120' } });
    expect(prompt.messages).toEqual([{ role: 'user', content: { type: 'text', text: 'Approved 120' } }]);
    expect(log.asked).toEqual(['elicit:Approve 120?']);
  });

  it('answers invalid prompt arguments with -32602', async () => {
    const { client } = await connect();
    const error = await protocolError(client.getPrompt({ name: 'quick_approval', arguments: { amount: 'lots' } }));
    expect(error.code).toBe(-32602);
    expect(error.message).toContain('Invalid arguments: amount');
  });

  it('serves a multi-round flow as a prompt', async () => {
    const { client } = await connect();
    const prompt = await client.getPrompt({ name: 'draft_notes' });
    expect(prompt.messages).toHaveLength(1);
    expect(JSON.parse((prompt.messages[0]!.content as { text: string }).text)).toEqual({
      roots: ['file:///repo'],
      notes: 'Fixed bugs.',
    });
  });

  it('serves a flow as a resource whose URI carries the arguments', async () => {
    const { client, log } = await connect();
    const uri = 'baton://flows/deploy_production?version=3.1.4';
    const read = await client.readResource({ uri });
    expect(read.contents).toEqual([{ uri, mimeType: 'text/plain', text: 'Deployed 3.1.4 (ticket CHG-7)' }]);
    expect(log.asked).toHaveLength(2);
    const missing = await protocolError(client.readResource({ uri: 'baton://flows/deploy_production' }));
    expect(missing.code).toBe(-32602);
  });
});

describe('alongside ordinary tools on one McpServer', () => {
  let mixed: HttpServing;
  beforeAll(async () => {
    const runner = createRunner({ flows, codec: createRequestStateCodec({ keys: [generateKey()] }) });
    mixed = await serveHttp({
      host: '127.0.0.1',
      port: 0,
      factory: () => {
        const server = new McpServer({ name: 'mixed', version: '1.0.0' });
        server.registerTool('echo', { inputSchema: z.object({ text: z.string() }) }, async ({ text }) => ({
          content: [{ type: 'text', text }],
        }));
        server.registerTool('fails', {}, async () => {
          throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'plain tool failure');
        });
        registerFlows(server, { runner }).tools.get('link_account')!.disable();
        server.registerTool('late', {}, async () => ({ content: [{ type: 'text', text: 'registered later' }] }));
        return server;
      },
    });
  });
  afterAll(async () => {
    await mixed.close();
  });

  it('leaves ordinary tools to the SDK and serves the flows', async () => {
    const { client } = await connectHttp(mixed.url);
    clients.push(client);
    expect((await client.listTools()).tools.map((tool) => tool.name).sort()).toEqual([
      'deploy_production',
      'draft_notes',
      'echo',
      'fails',
      'late',
      'quick_approval',
    ]);
    expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'hi' } }))).toBe('hi');
    expect(await client.callTool({ name: 'echo', arguments: { text: 1 } })).toMatchObject({ isError: true });
    expect(await client.callTool({ name: 'fails', arguments: {} })).toMatchObject({
      isError: true,
      content: [{ text: 'plain tool failure' }],
    });
    expect(textOf(await client.callTool({ name: 'late', arguments: {} }))).toBe('registered later');
    expect(textOf(await client.callTool({ name: 'deploy_production', arguments: { version: '1.0.1' } }))).toBe(
      'Deployed 1.0.1 (ticket CHG-7)',
    );
    await expect(client.callTool({ name: 'link_account', arguments: {} })).rejects.toThrow(/disabled/);
  });
});

describe('a 2025-era client over stateless HTTP', () => {
  // Stateless HTTP keeps no `initialize` capabilities and has no channel for server-to-client
  // requests: the client is told what it needs, not that it "did not declare" form input.
  const needs2026 =
    'This tool asks for input over several rounds, which over HTTP needs an MCP client that speaks protocol ' +
    '2026-07-28; this client speaks an earlier revision. Use a 2026-07-28 client, or connect over stdio, ' +
    'which serves 2025-era clients too.';

  it('is told that multi-round flows over HTTP need a 2026-07-28 client (or stdio)', async () => {
    const { client, log, legs } = await connect({ negotiation: 'legacy' });
    // The official client, left to its default, negotiated 2025-11-25 at initialize (and declared form input).
    const init = legs.find((leg) => leg.request?.method === 'initialize');
    expect(init?.request?.params).toMatchObject({ protocolVersion: '2025-11-25', capabilities: { elicitation: {} } });
    expect(init?.response).toContain('"protocolVersion":"2025-11-25"');

    const result = await client.callTool({ name: 'deploy_production', arguments: { version: '1.0.2' } });
    expect(result).toMatchObject({ isError: true, content: [{ type: 'text', text: needs2026 }] });
    expect(textOf(result)).not.toMatch(/did not declare/);
    expect(log.asked).toEqual([]);
  });

  it('gets the same sentence from a prompt, as a JSON-RPC error', async () => {
    const { client } = await connect({ negotiation: 'legacy' });
    const refused = await protocolError(client.getPrompt({ name: 'quick_approval', arguments: { amount: '5' } }));
    expect(refused).toMatchObject({ code: -32603, message: needs2026 });
  });

  it('keeps the other flow errors as they are (invalid arguments)', async () => {
    const { client } = await connect({ negotiation: 'legacy' });
    const result = await client.callTool({ name: 'deploy_production', arguments: { version: '' } });
    expect(result).toMatchObject({ isError: true });
    expect(textOf(result)).toMatch(/^Invalid arguments/);
  });
});

describe('the HTTP body, parsed once by serveHttp', () => {
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': 'tools/list',
  };
  const list = {
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/list',
    params: {
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
        'io.modelcontextprotocol/clientCapabilities': {},
      },
    },
  };

  it('answers a JSON body in one piece, with its length', async () => {
    const response = await fetch(serving.url, { method: 'POST', headers, body: JSON.stringify(list) });
    const text = await response.text();
    expect(response.status).toBe(200);
    expect(Number(response.headers.get('content-length'))).toBe(Buffer.byteLength(text));
    expect(JSON.parse(text)).toMatchObject({ id: 1, result: { tools: expect.any(Array) } });
  });

  it('leaves a body that is not JSON to the SDK, which answers the parse error', async () => {
    const response = await fetch(serving.url, { method: 'POST', headers, body: '{not json' });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ id: null, error: { code: -32700 } });
  });

  it('still has the SDK check the parsed body against the headers', async () => {
    const response = await fetch(serving.url, {
      method: 'POST',
      headers: { ...headers, 'mcp-method': 'tools/call' },
      body: JSON.stringify(list),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: -32020 } });
  });
});

/** One raw 2026-07-28 request: `fetch` with the standard headers and the `_meta` envelope. */
async function rawRpc(
  url: URL,
  method: string,
  params: Record<string, unknown>,
  extraHeaders: Record<string, string> = {},
): Promise<{ status: number; body: any }> {
  const name: Record<string, string> = typeof params.name === 'string' ? { 'mcp-name': params.name } : {};
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...name,
      ...extraHeaders,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 7,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    }),
  });
  const text = await response.text();
  const data = text.startsWith('{') ? text : (/^data: (.*)$/m.exec(text)?.[1] ?? 'null');
  return { status: response.status, body: JSON.parse(data) };
}

describe('list results carry caching hints (SEP-2549)', () => {
  it('on tools/list, prompts/list, resources/list and resources/templates/list: ttlMs 0, cacheScope private (lists change with a deploy and a principal)', async () => {
    for (const method of ['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list']) {
      const { status, body } = await rawRpc(serving.url, method, {});
      expect(status).toBe(200);
      expect(body.result).toMatchObject({ resultType: 'complete', ttlMs: 0, cacheScope: 'private' });
    }
  });
});

describe('server/discover over stateless HTTP', () => {
  it('advertises the lists as fixed (listChanged: false): they are the flows module’s for the life of the process', async () => {
    const { status, body } = await rawRpc(serving.url, 'server/discover', {});
    expect(status).toBe(200);
    expect(body.result.capabilities).toMatchObject({
      tools: { listChanged: false },
      prompts: { listChanged: false },
      resources: { listChanged: false },
    });
  });

  it('so a subscriptions/listen for list changes is acknowledged with nothing to send, and ends', async () => {
    const response = await fetch(serving.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'subscriptions/listen',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 9,
        method: 'subscriptions/listen',
        params: {
          notifications: { toolsListChanged: true, promptsListChanged: true },
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      }),
    });
    const frames = [...(await response.text()).matchAll(/^data: (.*)$/gm)].map((match) => JSON.parse(match[1]!));
    expect(frames[0]).toMatchObject({
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: {}, _meta: { 'io.modelcontextprotocol/subscriptionId': 9 } },
    });
    expect(frames.at(-1)).toMatchObject({ id: 9, result: { resultType: 'complete' } });
  });
});

describe('an argument mirrored in a header (x-mcp-header, SEP-2243)', () => {
  const lookup = defineFlow({
    name: 'regional_lookup',
    description: 'Looks a query up in a region.',
    args: z.object({ region: z.string().meta({ 'x-mcp-header': 'Region' }), query: z.string() }),
    inputs: defineInputs({}),
    machine: setup({ types: { input: {} as { region: string; query: string }, output: {} as string } }).createMachine({
      id: 'regional_lookup',
      initial: 'done',
      context: ({ input }) => input,
      states: { done: { type: 'final', output: ({ context }) => `${context.query} in ${context.region}` } },
    }),
  });
  let regional: HttpServing;
  beforeAll(async () => {
    const runner = createRunner({
      flows: [lookup],
      codec: createRequestStateCodec({ keys: createKeyRing([generateKey()]) }),
    });
    regional = await serveHttp({ factory: createFlowServerFactory({ runner }), host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await regional.close();
  });
  const call = (region: string, headers: Record<string, string>) =>
    rawRpc(regional.url, 'tools/call', { name: 'regional_lookup', arguments: { region, query: 'q' } }, headers);

  it('lists the annotation declared with zod .meta() in the inputSchema', async () => {
    const { body } = await rawRpc(regional.url, 'tools/list', {});
    expect(body.result.tools[0].inputSchema.properties.region).toMatchObject({
      type: 'string',
      'x-mcp-header': 'Region',
    });
  });

  it('serves a call whose Mcp-Param header matches the body, plain or Base64', async () => {
    expect((await call('eu-west', { 'mcp-param-region': 'eu-west' })).body.result.content).toEqual([
      { type: 'text', text: 'q in eu-west' },
    ]);
    const encoded = `=?base64?${Buffer.from('Zürich').toString('base64')}?=`;
    expect((await call('Zürich', { 'mcp-param-region': encoded })).body.result.content[0].text).toBe('q in Zürich');
  });

  it('refuses a missing, mismatched or badly encoded header: -32020 with HTTP 400', async () => {
    const refused: Record<string, string>[] = [
      {},
      { 'mcp-param-region': 'us-east' },
      { 'mcp-param-region': '=?base64?SGVs!!!bG8=?=' },
    ];
    for (const headers of refused) {
      const { status, body } = await call('eu-west', headers);
      expect(status).toBe(400);
      expect(body.error).toMatchObject({ code: -32020, data: { mismatch: { header: 'Mcp-Param-Region' } } });
    }
  });
});
