/**
 * The per-request server of a `tools/call` registers the called tool alone
 * (`calledTool.ts`): `serveHttp` notes the tool a parsed body calls, and the
 * flow server factory registers only it, or only the decision tools for a
 * decision tool, or everything for any other request. Checked on the servers
 * the factory really builds for real SDK clients over HTTP on 127.0.0.1,
 * with the example flows on a memory ledger (so the decision tools are
 * served too), and on hostile bodies.
 */
import { createFlowServerFactory, type HttpServing, serveHttp } from '@baton/adapters';
import { createKeyRing, createRequestStateCodec, createRunner, generateKey } from '@baton/engine';
import { createMemoryLedger } from '@baton/store';
import type { Client } from '@modelcontextprotocol/client';
import type { McpServer, McpServerFactory } from '@modelcontextprotocol/server';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import flows from '../examples/approvals/index.js';
import { calledTool, noteCalledTool } from '../packages/adapters/src/mcp/calledTool.js';
import { connectHttp, protocolError, textOf } from './helpers/mcpClients.js';

const FLOW_TOOLS = flows.map((flow) => flow.name).sort();
const DECISION_TOOLS = [
  'baton_decide',
  'baton_delegate',
  'baton_inbox',
  'baton_requests',
  'baton_resume',
  'baton_withdraw',
];
const EVERY_TOOL = [...FLOW_TOOLS, ...DECISION_TOOLS].sort();

/** The tools a server has registered, asked through the SDK's own lookup. */
const registeredTools = (server: McpServer) =>
  EVERY_TOOL.filter((name) => server.toolInputSchemaJson(name) !== undefined);

let serving: HttpServing;
/** The tools registered on each server the factory built, in order. */
const built: string[][] = [];
const clients: Client[] = [];

beforeAll(async () => {
  const runner = createRunner({
    flows,
    ledger: createMemoryLedger(),
    codec: createRequestStateCodec({ keys: createKeyRing([generateKey()]) }),
  });
  const factory = createFlowServerFactory({ runner });
  const recording: McpServerFactory = (ctx) => {
    const server = factory(ctx) as McpServer;
    built.push(registeredTools(server));
    return server;
  };
  serving = await serveHttp({ factory: recording, host: '127.0.0.1', port: 0 });
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
  built.length = 0;
});
afterAll(async () => {
  await serving.close();
});

async function connect() {
  const { client } = await connectHttp(serving.url);
  clients.push(client);
  built.length = 0; // the connection's own requests (discovery) are not the test's
  return client;
}

describe('the server built for one request', () => {
  it('has every tool for a listing, and the listing is whole', async () => {
    const client = await connect();
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(EVERY_TOOL);
    expect(built).toEqual([EVERY_TOOL]);
  });

  it('has only the called flow for its tools/call, in every round, and the flow completes', async () => {
    const client = await connect();
    const result = await client.callTool({ name: 'deploy_production', arguments: { version: '1.2.3' } });
    expect(textOf(result)).toBe('Deployed 1.2.3 to production (change ticket CHG-7).');
    expect(built.length).toBeGreaterThanOrEqual(2); // the first call and its retry with the answers
    for (const tools of built) expect(tools).toEqual(['deploy_production']);
  });

  it('has only the decision tools for a decision tool, which answers', async () => {
    const client = await connect();
    const result = await client.callTool({ name: 'baton_inbox', arguments: {} });
    expect(result.isError).not.toBe(true);
    expect(built).toEqual([DECISION_TOOLS]);
  });

  it('has everything for an unknown tool, which is refused as before', async () => {
    const client = await connect();
    const error = await protocolError(client.callTool({ name: 'no_such_tool', arguments: {} }));
    expect(error.message).toContain('no_such_tool');
    expect(built).toEqual([EVERY_TOOL]);
  });
});

describe('noteCalledTool', () => {
  const request = () => new Request('http://127.0.0.1/mcp', { method: 'POST' });
  const noted = (body: unknown) => {
    const r = request();
    noteCalledTool(r, body);
    return calledTool(r);
  };

  it('notes the name of one tools/call request', () => {
    expect(noted({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'deploy_production' } })).toBe(
      'deploy_production',
    );
  });

  it('notes nothing for other methods, batches, odd params or inherited fields', () => {
    const bodies: unknown[] = [
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      [{ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'deploy_production' } }],
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 42 } },
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: null },
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: 'deploy_production' },
      JSON.parse('{"__proto__": {"method": "tools/call", "params": {"name": "deploy_production"}}}'),
      JSON.parse('{"method": "tools/call", "params": {"__proto__": {"name": "deploy_production"}}}'),
      null,
      'tools/call',
      undefined,
    ];
    for (const body of bodies) expect(noted(body)).toBeUndefined();
  });

  it('keeps notes apart per request, and has none for a request never noted', () => {
    const a = request();
    const b = request();
    noteCalledTool(a, { method: 'tools/call', params: { name: 'one' } });
    noteCalledTool(b, { method: 'tools/call', params: { name: 'two' } });
    expect([calledTool(a), calledTool(b), calledTool(request()), calledTool(undefined)]).toEqual([
      'one',
      'two',
      undefined,
      undefined,
    ]);
  });
});
