/**
 * What a flow returns and how it is served beyond text, through the real
 * surface: the conformance suite's content fixtures (`test/conformance/content.ts`,
 * all Baton flows) served in-process by `serveHttp` on 127.0.0.1 and called by
 * the official SDK client over HTTP on the 2026-07-28 wire. Content of every
 * kind in tool results and prompts, a tool error, `progress()` as
 * `notifications/progress`, an author's JSON Schema listed verbatim, flows as
 * resources at author URIs and URI templates (text, JSON and blob contents),
 * and argument completers answering `completion/complete`; then what
 * `defineFlow` refuses.
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
import { McpServer } from '@modelcontextprotocol/server';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createMachine } from 'xstate';
import { z } from 'zod';
import { exposure, flows } from './conformance/content.js';
import { connectHttp, textOf } from './helpers/mcpClients.js';

let serving: HttpServing;
const clients: Client[] = [];

beforeAll(async () => {
  const runner = createRunner({ flows, codec: createRequestStateCodec({ keys: createKeyRing([generateKey()]) }) });
  const expose = (flow: { name: string }) => exposure[flow.name] ?? { tool: true };
  serving = await serveHttp({ factory: createFlowServerFactory({ runner, expose }), host: '127.0.0.1', port: 0 });
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});
afterAll(async () => {
  await serving.close();
});

async function connect() {
  const { client } = await connectHttp(serving.url);
  clients.push(client);
  return client;
}

describe('content of every kind', () => {
  it('returns text, image and an embedded resource in one tool result', async () => {
    const client = await connect();
    const result = await client.callTool({ name: 'test_multiple_content_types', arguments: {} });
    expect(result.content).toEqual([
      { type: 'text', text: 'Multiple content types test:' },
      { type: 'image', mimeType: 'image/png', data: expect.stringMatching(/^iVBORw0KGgo/) },
      {
        type: 'resource',
        resource: {
          uri: 'test://mixed-content-resource',
          mimeType: 'application/json',
          text: '{"test":"data","value":123}',
        },
      },
    ]);
  });

  it('encodes audio bytes as base64 with their mime type', async () => {
    const client = await connect();
    const result = await client.callTool({ name: 'test_audio_content', arguments: {} });
    const [block] = result.content as { type: string; data: string; mimeType: string }[];
    expect(block).toMatchObject({ type: 'audio', mimeType: 'audio/wav' });
    const bytes = Buffer.from(block!.data, 'base64');
    expect(bytes.subarray(0, 4).toString('ascii')).toBe('RIFF');
    expect(bytes.subarray(8, 12).toString('ascii')).toBe('WAVE');
  });

  it('answers a failing flow with a tool error result carrying its message', async () => {
    const client = await connect();
    const result = await client.callTool({ name: 'test_error_handling', arguments: {} });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe('This tool intentionally returns an error for testing');
  });

  it('sends prompts with image and embedded-resource messages', async () => {
    const client = await connect();
    const image = await client.getPrompt({ name: 'test_prompt_with_image' });
    expect(image.messages.map((m) => [m.role, m.content.type])).toEqual([
      ['user', 'image'],
      ['user', 'text'],
    ]);
    const embedded = await client.getPrompt({
      name: 'test_prompt_with_embedded_resource',
      arguments: { resourceUri: 'test://chosen' },
    });
    expect(embedded.messages[0]!.content).toEqual({
      type: 'resource',
      resource: { uri: 'test://chosen', mimeType: 'text/plain', text: 'Embedded resource content for testing.' },
    });
  });
});

describe('progress', () => {
  it('sends each progress() of the round as notifications/progress for the request, before the result', async () => {
    const client = await connect();
    const seen: { progress: number; total?: number }[] = [];
    const result = await client.callTool(
      { name: 'test_tool_with_progress', arguments: {} },
      { onprogress: (p) => seen.push({ progress: p.progress, total: p.total }) },
    );
    expect(seen).toEqual([
      { progress: 0, total: 100 },
      { progress: 50, total: 100 },
      { progress: 100, total: 100 },
    ]);
    expect(textOf(result)).toContain('Progress test completed');
  });
});

describe('an author JSON Schema', () => {
  it('is listed verbatim, 2020-12 keywords included', async () => {
    const client = await connect();
    const { tools } = await client.listTools();
    const tool = tools.find((t) => t.name === 'json_schema_2020_12_tool')!;
    expect(tool.inputSchema).toMatchObject({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $defs: { address: { $anchor: 'addressDef' } },
      allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
      if: { required: ['contactMethod'] },
      // biome-ignore lint/suspicious/noThenProperty: JSON Schema's conditional keyword
      then: { required: ['phone'] },
      else: { required: ['email'] },
      additionalProperties: false,
    });
  });

  it('while args still validate each call', async () => {
    const client = await connect();
    const ok = await client.callTool({ name: 'json_schema_2020_12_tool', arguments: { email: 'a@b.c' } });
    expect(textOf(ok)).toContain('a@b.c');
    const refused = await client
      .callTool({ name: 'json_schema_2020_12_tool', arguments: { contactMethod: 'phone' } })
      .then(
        (r) => textOf(r),
        (e: Error) => e.message,
      );
    expect(refused).toMatch(/phone is required/);
  });
});

describe('resources at author URIs', () => {
  it('lists static resources and templates with their mime types', async () => {
    const client = await connect();
    const { resources } = await client.listResources();
    expect(resources).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ uri: 'test://static-text', name: 'test_static_text', mimeType: 'text/plain' }),
        expect.objectContaining({ uri: 'test://static-binary', name: 'test_static_binary', mimeType: 'image/png' }),
      ]),
    );
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates).toEqual([
      expect.objectContaining({ uriTemplate: 'test://template/{id}/data', mimeType: 'application/json' }),
    ]);
  });

  it('reads text, blob and templated JSON contents', async () => {
    const client = await connect();
    expect((await client.readResource({ uri: 'test://static-text' })).contents).toEqual([
      { uri: 'test://static-text', mimeType: 'text/plain', text: 'This is the content of the static text resource.' },
    ]);
    expect((await client.readResource({ uri: 'test://static-binary' })).contents).toEqual([
      { uri: 'test://static-binary', mimeType: 'image/png', blob: expect.stringMatching(/^iVBORw0KGgo/) },
    ]);
    const templated = await client.readResource({ uri: 'test://template/123/data' });
    expect(templated.contents).toEqual([
      {
        uri: 'test://template/123/data',
        mimeType: 'application/json',
        text: JSON.stringify({ id: '123', templateTest: true, data: 'Data for ID: 123' }),
      },
    ]);
  });
});

describe('completions', () => {
  it('completes prompt arguments and template variables with the flow completers', async () => {
    const client = await connect();
    const prompt = await client.complete({
      ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
      argument: { name: 'arg1', value: 'par' },
    });
    expect(prompt.completion.values).toEqual(['paris', 'park', 'party']);
    const template = await client.complete({
      ref: { type: 'ref/resource', uri: 'test://template/{id}/data' },
      argument: { name: 'id', value: '4' },
    });
    expect(template.completion.values).toEqual(['456']);
    const none = await client.complete({
      ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
      argument: { name: 'arg2', value: 'x' },
    });
    expect(none.completion.values).toEqual([]);
  });
});

describe('registerFlows refuses', () => {
  const runner = createRunner({ flows, codec: createRequestStateCodec({ keys: createKeyRing([generateKey()]) }) });
  const server = () => new McpServer({ name: 't', version: '1' });
  it('a URI template variable that names no argument', () => {
    expect(() =>
      registerFlows(server(), {
        runner,
        expose: (flow) => (flow.name === 'test_template_data' ? { resource: { uri: 'test://t/{nope}' } } : {}),
      }),
    ).toThrow('flow "test_template_data": resource template test://t/{nope} names no argument nope');
  });
  it('a static URI for a flow with required arguments', () => {
    expect(() =>
      registerFlows(server(), {
        runner,
        expose: (flow) => (flow.name === 'test_template_data' ? { resource: { uri: 'test://fixed' } } : {}),
      }),
    ).toThrow('resource test://fixed has no variables, but the flow needs arguments');
  });
});

describe('defineFlow refuses', () => {
  const machine = createMachine({ initial: 'done', states: { done: { type: 'final' } } });
  const base = { description: 'd', args: z.object({ a: z.string() }), inputs: defineInputs({}), machine };
  it('a completer for an argument args does not have', () => {
    expect(() => defineFlow({ ...base, name: 'x', complete: { b: () => [] } })).toThrow(
      'flow "x": complete.b names no argument of its args',
    );
  });
  it('an inputSchema that is not an object schema', () => {
    expect(() => defineFlow({ ...base, name: 'y', inputSchema: { type: 'string' } })).toThrow(
      'inputSchema must be a JSON Schema object with type "object"',
    );
  });
});
