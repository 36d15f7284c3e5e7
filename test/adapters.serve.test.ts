/**
 * `baton serve` as child processes over real HTTP on 127.0.0.1: two servers
 * sharing `BATON_KEYS` and one SQLite ledger serve alternating rounds of one
 * flow; a state is single-use across both (-32602 replayed), bound to its
 * principal (two bearer tokens), and expires (`--ttl 1`); unknown tokens get
 * 401, oversized bodies 413, foreign Host and Origin headers 403; SIGTERM
 * stops the server cleanly.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKey } from '@baton/engine';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  connectHttp,
  expectInputRequired,
  FLOWS,
  protocolError,
  type ServeProcess,
  sleep,
  startServe,
  textOf,
  toolRound,
} from './helpers/mcpClients.js';

const ALICE = 'alice-token-0123456789abcdef';
const BOB = 'bob-token-0123456789abcdef';
let dir: string;
let serverA: ServeProcess;
let serverB: ServeProcess;
let shortLived: ServeProcess;
const clients: Client[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'baton-serve-'));
  const tokens = join(dir, 'tokens.json');
  await writeFile(tokens, JSON.stringify({ [ALICE]: 'alice', [BOB]: 'bob' }));
  const env = { BATON_KEYS: `${generateKey()},${generateKey()}` };
  const shared = [
    FLOWS,
    '--http',
    '127.0.0.1:0',
    '--auth-tokens',
    tokens,
    '--ledger',
    `sqlite:${join(dir, 'ledger.db')}`,
  ];
  [serverA, serverB, shortLived] = await Promise.all([
    startServe(shared, env),
    startServe(shared, env),
    startServe([FLOWS, '--http', '127.0.0.1:0', '--auth-tokens', tokens, '--ttl', '1'], env),
  ]);
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});
afterAll(async () => {
  await Promise.all([serverA?.stop(), serverB?.stop(), shortLived?.stop()]);
  await rm(dir, { recursive: true, force: true });
});

async function connect(targets: ServeProcess[], token: string, options: Parameters<typeof connectHttp>[1] = {}) {
  const connected = await connectHttp(
    targets.map((server) => server.url),
    { ...options, token },
  );
  clients.push(connected.client);
  return connected;
}

const deploy = (version: string) => ({ name: 'deploy_production', arguments: { version } });
const answers = {
  confirm_deploy: { action: 'accept', content: { confirm: true } },
  change_ticket: { action: 'accept', content: { ticket: 'CHG-1' } },
};

describe('two servers sharing keys and a SQLite ledger', () => {
  it('serve alternating rounds of one flow (no session affinity)', async () => {
    const { client, legs } = await connect([serverA, serverB], ALICE);
    const result = await client.callTool(deploy('7.0.0'));
    expect(textOf(result)).toBe('Deployed 7.0.0 (ticket CHG-7)');
    const rounds = legs.filter((leg) => leg.request?.method === 'tools/call');
    expect(rounds).toHaveLength(2);
    expect(new Set(rounds.map((leg) => leg.url))).toEqual(new Set([serverA.url.href, serverB.url.href]));
  });

  it('redeem a state once: a replay with other answers is -32602 replayed, an identical retry is answered again', async () => {
    const { client: viaA } = await connect([serverA], ALICE);
    const { client: viaB } = await connect([serverB], ALICE);
    const first = expectInputRequired(await toolRound(viaA, deploy('7.1.0')));
    const done = await toolRound(viaB, {
      ...deploy('7.1.0'),
      requestState: first.requestState,
      inputResponses: answers,
    });
    expect(textOf(done as { content: unknown })).toBe('Deployed 7.1.0 (ticket CHG-1)');

    const again = await toolRound(viaA, {
      ...deploy('7.1.0'),
      requestState: first.requestState,
      inputResponses: answers,
    });
    expect(textOf(again as { content: unknown })).toBe('Deployed 7.1.0 (ticket CHG-1)');

    const replay = await protocolError(
      toolRound(viaA, {
        ...deploy('7.1.0'),
        requestState: first.requestState,
        inputResponses: { ...answers, confirm_deploy: { action: 'decline' } },
      }),
    );
    expect(replay).toEqual({ code: -32602, message: 'Invalid or expired requestState', data: { reason: 'replayed' } });
  });

  it("reject another principal's state, without using it up", async () => {
    const { client: alice } = await connect([serverA], ALICE);
    const { client: bob } = await connect([serverB], BOB);
    const first = expectInputRequired(await toolRound(alice, deploy('7.2.0')));
    const stolen = await protocolError(
      toolRound(bob, { ...deploy('7.2.0'), requestState: first.requestState, inputResponses: answers }),
    );
    expect(stolen).toEqual({
      code: -32602,
      message: 'Invalid or expired requestState',
      data: { reason: 'bad_integrity' },
    });
    const done = await toolRound(alice, {
      ...deploy('7.2.0'),
      requestState: first.requestState,
      inputResponses: answers,
    });
    expect(textOf(done as { content: unknown })).toBe('Deployed 7.2.0 (ticket CHG-1)');
  });
});

describe('state lifetime', () => {
  it('rejects a state after --ttl seconds with -32602 expired', async () => {
    const { client } = await connect([shortLived], ALICE);
    const first = expectInputRequired(await toolRound(client, deploy('8.0.0')));
    await sleep(2100);
    const expired = await protocolError(
      toolRound(client, { ...deploy('8.0.0'), requestState: first.requestState, inputResponses: answers }),
    );
    expect(expired).toMatchObject({ code: -32602, data: { reason: 'expired' } });
  });
});

interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * A raw HTTP request (node:http, so Host can be set and bodies can be oversized or slow).
 * `body` is sent with its length, `chunks` chunked, `partial` after a declared
 * `content-length` that it falls short of (the rest is never sent). Settles once: with the
 * response, or with a clear failure when the connection closes without one (a client that is
 * still sending when the server closes sees EPIPE or ECONNRESET; the response may still come).
 */
function raw(
  url: URL,
  options: {
    headers?: Record<string, string>;
    body?: string | Buffer;
    chunks?: Buffer[];
    partial?: Buffer;
  },
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    let sendError: NodeJS.ErrnoException | undefined;
    let responded = false;
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      outcome();
      // A partial body is never finished: drop the connection once the answer is in.
      if (options.partial) req.destroy();
    };
    const req = httpRequest(
      url,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...options.headers,
        },
        timeout: 20_000,
      },
      (res) => {
        responded = true;
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => settle(() => resolve({ status: res.statusCode ?? 0, headers: res.headers, body })));
        res.on('close', () =>
          settle(() => reject(new Error(`${res.statusCode} response cut off after ${body.length} characters`))),
        );
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE' || error.code === 'ECONNRESET') sendError = error;
      else settle(() => reject(error));
    });
    req.on('timeout', () => req.destroy(new Error('no response within 20 s')));
    req.on('close', () => {
      // With a response, its own 'end' or 'close' settles (req 'close' may come before res 'end').
      if (responded) return;
      const cause = sendError ? ` (${sendError.code} while sending the body)` : '';
      settle(() => reject(new Error(`the server closed the connection without a response${cause}`)));
    });
    if (options.partial) req.write(options.partial);
    else if (options.chunks) {
      for (const chunk of options.chunks) req.write(chunk);
      req.end();
    } else req.end(options.body);
  });
}

const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });

describe('the HTTP gate', () => {
  it('answers a missing or unknown bearer token with 401 and a challenge', async () => {
    const missing = await raw(serverA.url, { body: ping });
    expect(missing.status).toBe(401);
    expect(String(missing.headers['www-authenticate'])).toMatch(/^Bearer /);
    const unknown = await raw(serverA.url, { body: ping, headers: { authorization: 'Bearer not-a-token' } });
    expect(unknown.status).toBe(401);
    const near = await raw(serverA.url, { body: ping, headers: { authorization: `Bearer ${ALICE}x` } });
    expect(near.status).toBe(401);
  });

  it('rejects a body over the limit with 413, declared or streamed', async () => {
    const big = Buffer.alloc(2 * 1024 * 1024, 0x20);
    const declared = await raw(serverA.url, { body: big, headers: { authorization: `Bearer ${ALICE}` } });
    expect(declared.status).toBe(413);
    expect(JSON.parse(declared.body)).toMatchObject({ error: { message: 'Request body exceeds 1048576 bytes' } });
    const streamed = await raw(serverA.url, {
      chunks: [big.subarray(0, 700_000), big.subarray(700_000, 1_400_000), big.subarray(1_400_000)],
      headers: { authorization: `Bearer ${ALICE}` },
    });
    expect(streamed.status).toBe(413);
  });

  it('delivers the 413 to every client still uploading (lingering close), then answers at once', async () => {
    // A server that closes while the client is still sending makes the kernel reset the
    // connection, and the reset can discard the 413 before the client reads it (Node: EPIPE and
    // no response). Bodies larger than the socket buffers show it: with 8 MiB, about half of the
    // posts to a plain close-after-answer server get no 413.
    const big = Buffer.alloc(8 * 1024 * 1024, 0x20);
    const halves = [big.subarray(0, 4_000_000), big.subarray(4_000_000)];
    const auth = { authorization: `Bearer ${ALICE}` };
    const declared = { ...auth, 'content-length': String(big.length) };
    const outcomes: string[] = [];
    for (let i = 0; i < 30; i++) {
      // Even: the length is declared (refused from the headers); odd: chunked (refused past the limit).
      const post = raw(serverA.url, { chunks: halves, headers: i % 2 === 0 ? declared : auth });
      outcomes.push(
        await post.then(
          (response) => String(response.status),
          (error: Error) => error.message,
        ),
      );
    }
    expect(outcomes).toEqual(Array(30).fill('413'));
    const after = await raw(serverA.url, { body: ping, headers: auth });
    expect(after.status).toBe(200);
  });

  it('rejects a foreign Host or Origin on a loopback bind (DNS rebinding)', async () => {
    const auth = { authorization: `Bearer ${ALICE}` };
    expect((await raw(serverA.url, { body: ping, headers: { ...auth, host: 'evil.example' } })).status).toBe(403);
    expect((await raw(serverA.url, { body: ping, headers: { ...auth, origin: 'http://evil.example' } })).status).toBe(
      403,
    );
    expect(
      (await raw(serverA.url, { body: ping, headers: { ...auth, origin: `http://localhost:${serverA.url.port}` } }))
        .status,
    ).not.toBe(403);
  });

  it('checks the bearer token and Host before reading a body: it answers while a slow body is still unsent', async () => {
    // 900 kB declared (under the 1 MiB limit), 64 KiB sent, the rest never: a server that read
    // the body first would not answer at all.
    const declared = { 'content-length': '900000' };
    const partial = Buffer.alloc(64 * 1024, 0x20);
    const anonymous = await raw(serverA.url, { partial, headers: declared });
    expect(anonymous.status).toBe(401);
    expect(String(anonymous.headers['www-authenticate'])).toMatch(/^Bearer /);
    const foreign = await raw(serverA.url, {
      partial,
      headers: { ...declared, authorization: `Bearer ${ALICE}`, host: 'evil.example' },
    });
    expect(foreign.status).toBe(403);
    // The server still answers at once after both.
    expect((await raw(serverA.url, { body: ping, headers: { authorization: `Bearer ${ALICE}` } })).status).toBe(200);
  });

  it('serves only /mcp', async () => {
    const other = new URL('/other', serverA.url);
    expect((await raw(other, { body: ping, headers: { authorization: `Bearer ${ALICE}` } })).status).toBe(404);
  });
});

describe('loopback, decided from the address bound', () => {
  it('keeps the Host and Origin checks on for loopback spelled another way (127.1, 2130706433)', async () => {
    for (const host of ['127.1', '2130706433']) {
      const server = await startServe([FLOWS, '--http', `${host}:0`], { BATON_KEYS: generateKey() });
      try {
        expect(server.url.hostname).toBe('127.0.0.1');
        expect(server.stderr()).not.toMatch(/not a loopback address/);
        expect((await raw(server.url, { body: ping, headers: { host: 'evil.example' } })).status).toBe(403);
        expect((await raw(server.url, { body: ping, headers: { origin: 'http://evil.example' } })).status).toBe(403);
        expect((await raw(server.url, { body: ping })).status).toBe(200);
      } finally {
        await server.stop();
      }
    }
  });

  it('names every check that is off when the address is not loopback', async () => {
    const server = await startServe([FLOWS, '--http', '0.0.0.0:0'], { BATON_KEYS: generateKey() });
    try {
      const warning = server
        .stderr()
        .split('\n')
        .find((line) => line.includes('not a loopback address'));
      expect(warning).toMatch(/^baton: warning: 0\.0\.0\.0:\d+ is not a loopback address and these checks are off: /);
      expect(warning).toContain('Host/Origin (DNS-rebinding protection)');
      expect(warning).toContain('bearer authentication (every caller shares the principal "anonymous")');
    } finally {
      await server.stop();
    }
  });
});

describe('shutdown', () => {
  it('closes cleanly on SIGTERM', async () => {
    const server = await startServe([FLOWS, '--http', '127.0.0.1:0', '--ledger', `sqlite:${join(dir, 'other.db')}`], {
      BATON_KEYS: generateKey(),
    });
    const code = await server.stop();
    expect({ code, signal: server.child.signalCode, stderr: server.stderr() }).toMatchObject({ code: 0 });
    expect(server.stderr()).not.toMatch(/\n\s+at /);
  });
});
