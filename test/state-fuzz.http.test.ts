/**
 * Random requestStates over real HTTP with the official client (bounded in
 * count): random base64url, random bytes behind a valid format-3 header,
 * behind a format-2 header, and a real state with its body bytes replaced.
 * Every one gets JSON-RPC -32602 "Invalid or expired requestState" with a
 * reason code, never another error, never a re-prompt, and the server keeps
 * serving.
 */
import { randomBytes } from 'node:crypto';
import { createFlowServerFactory, type HttpServing, serveHttp } from '@baton/adapters';
import { createKeyRing, createRequestStateCodec, createRunner, generateKey } from '@baton/engine';
import type { Client } from '@modelcontextprotocol/client';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import flows, { expose } from './fixtures/adapter-flows/index.js';
import { connectHttp, expectInputRequired, protocolError, toolRound } from './helpers/mcpClients.js';

let serving: HttpServing;
let client: Client;
const ring = createKeyRing([generateKey()]);

beforeAll(async () => {
  const runner = createRunner({ flows, codec: createRequestStateCodec({ keys: ring }) });
  serving = await serveHttp({ factory: createFlowServerFactory({ runner, expose }), host: '127.0.0.1', port: 0 });
  client = (await connectHttp(serving.url)).client;
});
afterAll(async () => {
  await client.close();
  await serving.close();
});

const REASONS = ['malformed', 'unsupported_version', 'unknown_key', 'bad_integrity', 'too_large', 'payload_too_large'];

it('refuses random states with -32602 and a reason code, and keeps serving', async () => {
  const call = { name: 'deploy_production', arguments: { version: '7.0.0' } };
  const first = expectInputRequired(await toolRound(client, call));
  const real = Buffer.from(first.requestState, 'base64url');
  const headerV3 = real.subarray(0, 6);
  const headerV2 = Buffer.from([2, 1, 0, ...ring.current.kidBytes]);
  const wire = fc.oneof(
    fc.stringMatching(/^[A-Za-z0-9_-]{1,300}$/),
    fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.concat([headerV3, b]).toString('base64url')),
    fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.concat([headerV2, b]).toString('base64url')),
    fc
      .uint8Array({ minLength: 1, maxLength: 200 })
      .map((b) => Buffer.concat([real.subarray(0, 22), b, real.subarray(-16)]).toString('base64url')),
  );
  const samples = fc.sample(wire, { numRuns: 40, seed: 16 });
  samples.push(randomBytes(20_000).toString('base64url'));
  for (const requestState of samples) {
    const error = await protocolError(
      toolRound(client, { ...call, requestState, inputResponses: { confirm_deploy: { action: 'decline' } } }),
    );
    expect(error).toMatchObject({ code: -32602, message: 'Invalid or expired requestState' });
    expect(REASONS).toContain((error as { data: { reason: string } }).data.reason);
  }
  // The real state still opens (none of the above was redeemed or broke the server).
  const next = await toolRound(client, {
    ...call,
    requestState: first.requestState,
    inputResponses: { confirm_deploy: { action: 'accept', content: { confirm: true } } },
  });
  expect(next).toMatchObject({ resultType: 'input_required' });
  expect(Object.keys((next as { inputRequests: object }).inputRequests)).toEqual(['change_ticket']);
}, 60_000);
