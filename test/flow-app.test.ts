/**
 * A flow's own app (`defineFlow({ app })`, issue 38 item 4): the definition checks it (an HTML5
 * document, data functions for states the machine has), and the run's status carries the data the
 * flow computes from its context, typed by it, while the run waits in one of the app's states, for
 * its requester only; once the run has ended, there is none. The runner is real, on the in-memory
 * ledger; the resource `ui://baton/flows/<flow>` (`flowApps.ts`) is read back from a real `McpServer`,
 * and over loopback HTTP an MCP Apps client sees the flow's tool declare it (a plain client does not)
 * and reads the app's data with `baton_run_status`.
 */

import { createFlowServerFactory, serveHttp } from '@baton/adapters';
import {
  ask,
  createKeyRing,
  createRequestStateCodec,
  createRunner,
  decision,
  defineFlow,
  defineInputs,
  FlowDefinitionError,
  generateKey,
  type InputEvents,
} from '@baton/engine';
import { createMemoryLedger } from '@baton/store';
import type { ClientCapabilities } from '@modelcontextprotocol/client';
import { McpServer } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { setup } from 'xstate';
import { z } from 'zod';
import { flowAppUri, registerFlowApps } from '../packages/adapters/src/mcp/apps/flowApps.js';
import { ALL_CAPABILITIES, connectHttp } from './helpers/mcpClients.js';

interface Order {
  item: string;
  qty: number;
}
const inputs = defineInputs({
  approval: decision({
    message: ({ context }: { context: Order }) => `Order ${context.qty} × ${context.item}?`,
    schema: z.object({ approve: z.boolean() }),
    role: 'buyer',
  }),
});
const machine = setup({
  types: { context: {} as Order, input: {} as Order, events: {} as InputEvents<typeof inputs> },
}).createMachine({
  id: 'order',
  context: ({ input }) => input,
  initial: 'review',
  states: {
    review: { meta: ask(inputs, 'approval'), on: { 'input.approval': 'done' } },
    done: { type: 'final', output: ({ context }) => `Ordered ${context.qty} × ${context.item}.` },
  },
});
const HTML =
  '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Order</title></head><body></body></html>';
const base = {
  name: 'order',
  title: 'Order',
  description: 'Order something; a buyer approves.',
  args: z.object({ item: z.string(), qty: z.number() }),
  inputs,
  machine,
};
const order = defineFlow({
  ...base,
  summary: (context) => `${context.qty} × ${context.item}`,
  // Typed by the machine's context: `context.qty` is a number here.
  app: { html: HTML, states: { review: (context) => ({ item: context.item, total: context.qty * 3 }) } },
});

describe('defineFlow({ app })', () => {
  it('keeps the document and the data functions, and refuses what cannot be an app', () => {
    expect(order.app?.html).toBe(HTML);
    expect(Object.keys(order.app?.states ?? {})).toEqual(['review']);
    expect(() => defineFlow({ ...base, app: { html: '<div>no document</div>', states: {} } })).toThrow(
      FlowDefinitionError,
    );
    expect(() => defineFlow({ ...base, app: { html: HTML, states: { nowhere: () => 1 } } })).toThrow(
      /app\.states\.nowhere names no state of its machine/,
    );
    expect(() => defineFlow({ ...base, app: { html: HTML, states: { review: 'x' as never } } })).toThrow(
      /must be a function of the context/,
    );
  });
});

describe('the run status of a flow with its own app', () => {
  it('carries the data of the state the run waits in, for its requester; none once it has ended', async () => {
    const runner = createRunner({
      flows: [order],
      ledger: createMemoryLedger(),
      codec: createRequestStateCodec({ keys: createKeyRing([generateKey()]) }),
      waitInCallSeconds: 0,
    });
    const alice = { principal: 'alice', roles: [] };
    const first = await runner.run({
      flow: 'order',
      args: { item: 'paper', qty: 4 },
      context: { ...alice, method: 'tools/call', target: 'order' },
    });
    expect(first.type).toBe('complete');
    const id = first.fid;

    const read = await runner.runStatus({ id, context: alice });
    expect(read).toMatchObject({
      status: 'found',
      run: {
        id,
        flow: 'order',
        flowTitle: 'Order',
        summary: '4 × paper',
        status: 'waiting',
        state: 'review',
        waitingFor: [{ key: 'approval', role: 'buyer', message: 'Order 4 × paper?' }],
        app: { state: 'review', data: { item: 'paper', total: 12 } },
      },
    });
    // Someone else's run reads as no run.
    expect(await runner.runStatus({ id, context: { principal: 'bob', roles: ['buyer'] } })).toEqual({
      status: 'refused',
      reason: 'unknown',
      message: `There is no request ${id}.`,
    });

    const bob = { principal: 'bob', roles: ['buyer'] };
    const answered = await runner.answerDecision({
      id,
      context: bob,
      answer: { action: 'accept', content: { approve: true } },
      channel: 'api',
    });
    expect(answered.status).toBe('recorded');
    const ended = await runner.runStatus({ id, context: alice });
    expect(ended.status === 'found' && ended.run).toMatchObject({
      status: 'completed',
      outcome: { text: 'Ordered 4 × paper.', isError: false },
    });
    expect(ended.status === 'found' && ended.run.app).toBeUndefined();
  });
});

describe('flowApps.ts', () => {
  it('serves the flow’s document as ui://baton/flows/<flow>, with the MCP Apps MIME type and no CSP domains', async () => {
    const server = new McpServer({ name: 't', version: '1' });
    const registered = registerFlowApps(server, { flows: new Map([[order.name, order]]) });
    expect(registered).toHaveLength(1);
    expect(flowAppUri(order)).toBe('ui://baton/flows/order');
    const read = await (
      registered[0] as unknown as { readCallback: (uri: URL, extra: unknown) => Promise<{ contents: unknown[] }> }
    ).readCallback(new URL('ui://baton/flows/order'), {});
    expect(read.contents).toEqual([
      {
        uri: 'ui://baton/flows/order',
        mimeType: 'text/html;profile=mcp-app',
        text: HTML,
        _meta: { ui: { csp: {}, prefersBorder: true } },
      },
    ]);
  });
});

describe('a flow with its own app, over loopback HTTP to an MCP Apps client', () => {
  it('its tool declares ui://baton/flows/<flow>, the document is served, and baton_run_status has its data', async () => {
    const runner = createRunner({
      flows: [order],
      ledger: createMemoryLedger(),
      codec: createRequestStateCodec({ keys: createKeyRing([generateKey()]) }),
      waitInCallSeconds: 0,
    });
    const serving = await serveHttp({ factory: createFlowServerFactory({ runner }), host: '127.0.0.1', port: 0 });
    const capabilities = {
      ...ALL_CAPABILITIES,
      extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: ['text/html;profile=mcp-app'] } },
    } as ClientCapabilities;
    const { client } = await connectHttp(serving.url, { capabilities });
    const plain = (await connectHttp(serving.url)).client;
    try {
      const tool = (await client.listTools()).tools.find((t) => t.name === 'order');
      expect(tool?._meta?.ui).toEqual({ resourceUri: 'ui://baton/flows/order' });
      const plainTool = (await plain.listTools()).tools.find((t) => t.name === 'order');
      expect(plainTool?._meta).toBeUndefined();
      const read = await client.readResource({ uri: 'ui://baton/flows/order' });
      expect(read.contents[0]).toMatchObject({ mimeType: 'text/html;profile=mcp-app', text: HTML });
      const called = await client.callTool({ name: 'order', arguments: { item: 'ink', qty: 2 } });
      const id = (called.structuredContent as { status: string; id: string }).id;
      const status = await client.callTool({ name: 'baton_run_status', arguments: { id } });
      expect(status.structuredContent).toMatchObject({
        run: { state: 'review', summary: '2 × ink', app: { state: 'review', data: { item: 'ink', total: 6 } } },
      });
    } finally {
      await Promise.all([client.close(), plain.close()]);
      await serving.close();
    }
  });
});
