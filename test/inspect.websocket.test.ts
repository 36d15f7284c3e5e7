/**
 * Stately's WebSocket inspector (`createWebSocketInspector`) on two
 * `baton serve --inspect` processes sharing keys and a ledger, the rounds of
 * one run alternating between them: a local WebSocket receiver (loopback)
 * sees one session whose root actor has the machine's name in every round and
 * whose last message shows the final state.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import {
  connectHttp,
  expectInputRequired,
  type ServeProcess,
  startServe,
  textOf,
  toolRound,
} from './helpers/mcpClients.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-inspect-ws-'));
const received: any[] = [];
let receiver: WebSocketServer;
const servers: ServeProcess[] = [];

beforeAll(async () => {
  receiver = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => receiver.once('listening', () => resolve()));
  receiver.on('connection', (socket) => {
    socket.on('message', (data) => received.push(JSON.parse(String(data))));
  });
  const url = `ws://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  const env = { BATON_KEYS: randomBytes(32).toString('base64url'), BATON_TEST_INSPECT_WS: url };
  const args = ['examples/approvals', '--http', '127.0.0.1:0', '--ledger', `sqlite:${join(dir, 'ledger.db')}`];
  // One after the other: the first creates the ledger's database.
  servers.push(await startServe([...args, '--inspect', 'test/fixtures/inspector/statelyWebSocket.ts'], env));
  servers.push(await startServe([...args, '--inspect', 'test/fixtures/inspector/statelyWebSocket.ts'], env));
}, 120_000);
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  for (const client of receiver?.clients ?? []) client.terminate();
  await new Promise((resolve) => receiver?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

describe("Stately's WebSocket inspector on two serving processes", () => {
  it('shows one session, named after the machine in every round, ending in the final state', async () => {
    const [a, b] = [await connectHttp(servers[0]!.url), await connectHttp(servers[1]!.url)];
    const args = { version: '7.1.0' };
    const first = expectInputRequired(await toolRound(a.client, { name: 'deploy_production', arguments: args }));
    const second = expectInputRequired(
      await toolRound(b.client, {
        name: 'deploy_production',
        arguments: args,
        requestState: first.requestState,
        inputResponses: {
          confirm_deploy: { action: 'accept', content: { confirm: true } },
          change_ticket: { action: 'accept', content: { ticket: '' } },
        },
      }),
    );
    const done = await toolRound(a.client, {
      name: 'deploy_production',
      arguments: args,
      requestState: second.requestState,
      inputResponses: { change_ticket: { action: 'accept', content: { ticket: 'CHG-7' } } },
    });
    expect(textOf(done as { content?: unknown })).toContain('Deployed 7.1.0');
    await Promise.all([a.client.close(), b.client.close()]);

    // Each process flushed before answering; the frames still cross loopback to this process.
    const rootSnapshots = () => received.filter((m) => m.type === '@xstate.snapshot' && m.sessionId === m.rootId);
    await expect.poll(() => rootSnapshots().at(-1)?.snapshot.value, { timeout: 2000 }).toBe('deployed');
    const sessions = new Set(received.map((m) => m.rootId));
    expect(sessions.size).toBe(1);
    const [session] = sessions;
    expect(session).toMatch(/^baton:/);
    const roots = received.filter((m) => m.type === '@xstate.actor' && m.sessionId === session);
    expect(roots.map((m) => m.name)).toEqual(['deploy_production', 'deploy_production', 'deploy_production']);
    const last = received.filter((m) => m.sessionId === session).at(-1);
    expect(last.type).toBe('@xstate.snapshot');
    expect(last.snapshot.value).toBe('deployed');
    expect(last.snapshot.status).toBe('done');
    expect(received.some((m) => m.snapshot?.status === 'stopped' && m.sessionId === session)).toBe(false);
  });
});
