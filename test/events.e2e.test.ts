/**
 * Events end to end: one `baton serve` per ledger (a SQLite file, then the
 * PostgreSQL the suite starts) serving flows that wait for `build.done` of a
 * commit, with a Standard Webhooks secret for that event and bearer tokens
 * (one with the scope `baton:events`, one without). Over real HTTP on
 * loopback: an event after the wait resumes its instance; one event reaches
 * two instances waiting on one key (`delivered: 2`) and its retry with the
 * same id is answered with the first count and delivers nothing again; an
 * event sent before the wait is kept and delivered when the wait begins
 * (lookback); an event sent after a wait timed out reaches nobody (the stale
 * waiter stays timed out) and is kept for the next wait. Refused with
 * `application/problem+json`: a wrong signature and an old timestamp (401), a
 * body the schema refuses (422, naming the field), an unknown event (404), a
 * bearer without the scope (403). A correctly signed body that is not JSON
 * (or starts with a byte order mark) is 400, never "the signature does not
 * match"; a name without a secret is refused in the same words as a wrong
 * secret for a name with one; what the server refuses before the route (a
 * body over the limit, declared or streamed; a foreign Origin) is
 * `application/problem+json` too. `baton send-event` signs and sends one.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { generateKey } from '@baton/engine';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
// standardwebhooks is a dependency of @baton/adapters (which verifies with it), not of the workspace root.
import { Webhook } from '../packages/adapters/node_modules/standardwebhooks/dist/index.js';
import { e2eLedgers, ledgerOfItsOwn, scratchDir, tokenOf as token, writeTokens } from './helpers/e2eLedgers.js';
import { connectHttp, runCli, type ServeProcess, startServe, textOf } from './helpers/mcpClients.js';

const dir = scratchDir('events-e2e');
const BATON_KEYS = generateKey();
const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const WRONG_SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const tokensFile = writeTokens(dir, {
  alice: { principal: 'alice' },
  ci: { principal: 'ci-bot', scopes: ['baton:events'] },
});
const secretsFile = join(dir, 'event-secrets');
writeFileSync(secretsFile, `# build.done comes from CI\nbuild.done=${SECRET}\n`);

const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});

const ledgers = e2eLedgers(dir);

let seq = 0;
/** A commit no other test of the file uses. */
const commit = () => `c${process.pid}x${++seq}`;

describe.each(ledgers)('events on a %s ledger', (name, given) => {
  let server: ServeProcess | undefined;
  let ledger = given;
  let drop = async () => {};
  beforeAll(async () => {
    if (!ledger) return;
    ({ url: ledger, drop } = await ledgerOfItsOwn(name, given!));
    server = await startServe(
      [
        'test/fixtures/event-flows',
        '--http',
        '127.0.0.1:0',
        '--ledger',
        ledger!,
        '--auth-tokens',
        tokensFile,
        '--wait-in-call',
        '0',
        '--event-secrets-file',
        secretsFile,
      ],
      { BATON_KEYS },
    );
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    await drop();
  });

  const eventsUrl = (event: string) => new URL(`/events/${event}`, server!.url);

  /**
   * POST an event signed with `secret` (default: the right one) at `at` (default: now); `raw`: send
   * these bytes (signed as they are) instead of `{ data }`.
   */
  async function send(
    data: unknown,
    options: { id?: string; secret?: string; at?: Date; event?: string; raw?: string | Buffer } = {},
  ) {
    const id = options.id ?? `evt-${randomBytes(8).toString('hex')}`;
    const at = options.at ?? new Date();
    const body = options.raw ?? JSON.stringify({ data });
    const response = await fetch(eventsUrl(options.event ?? 'build.done'), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': new Webhook(options.secret ?? SECRET).sign(id, at, body),
      },
      body,
    });
    const text = await response.text();
    return { status: response.status, type: response.headers.get('content-type'), json: JSON.parse(text) as any };
  }

  async function client(): Promise<Client> {
    const { client } = await connectHttp(server!.url, { token: token('alice') });
    clients.push(client);
    return client;
  }

  /** Start a flow that waits for the build of `sha`; its request id (the call answers "waiting" at once). */
  async function waitFor(sha: string, flow = 'await_build'): Promise<string> {
    const result = await (await client()).callTool({ name: flow, arguments: { commit: sha } });
    const waiting = result.structuredContent as { status: string; id: string; waitingFor: unknown };
    expect(waiting).toMatchObject({ status: 'waiting', waitingFor: [{ key: 'build', event: 'build.done' }] });
    return waiting.id;
  }

  async function resume(id: string): Promise<string> {
    return textOf(await (await client()).callTool({ name: 'baton_resume', arguments: { id } }));
  }

  it.skipIf(!ledger)(
    'delivers an event sent after the wait began, to every instance waiting on its key, once per id',
    async () => {
      const one = commit();
      const first = await waitFor(one);
      const sent = await send({ commit: one, status: 'success' }, { id: 'build-1' });
      expect(sent).toMatchObject({ status: 202, json: { delivered: 1, id: 'build-1' } });
      expect(await resume(first)).toBe(`built ${one}: success (event build-1)`);

      const shared = commit();
      const [a, b] = [await waitFor(shared), await waitFor(shared)];
      const both = await send({ commit: shared, status: 'failure' }, { id: 'build-2' });
      expect(both).toMatchObject({ status: 202, json: { delivered: 2 } });
      // The retry (same webhook-id) is answered with the first count and delivers nothing again.
      const retried = await send({ commit: shared, status: 'success' }, { id: 'build-2' });
      expect(retried).toMatchObject({ status: 202, json: { delivered: 2, duplicate: true } });
      expect(await resume(a)).toBe(`built ${shared}: failure (event build-2)`);
      expect(await resume(b)).toBe(`built ${shared}: failure (event build-2)`);
    },
  );

  it.skipIf(!ledger)('keeps an event that arrives before its wait and delivers it when the wait begins', async () => {
    const early = commit();
    expect(await send({ commit: early, status: 'success' }, { id: 'build-early' })).toMatchObject({
      status: 202,
      json: { delivered: 0 },
    });
    // The call's own round finds it: the flow ends in that call, no waiting.
    const result = await (await client()).callTool({ name: 'await_build', arguments: { commit: early } });
    expect(textOf(result)).toBe(`built ${early}: success (event build-early)`);
  });

  it.skipIf(!ledger)(
    'never delivers to a wait that timed out: the event is kept for the next wait instead',
    async () => {
      const late = commit();
      const stale = await waitFor(late, 'await_build_briefly');
      // The scheduler fires the 2-second timeout with no client present.
      const until = Date.now() + 30_000;
      let text = '';
      while (Date.now() < until) {
        text = await resume(stale);
        if (text.includes('in time')) break;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(text).toBe(`no build of ${late} reported in time`);
      expect(await send({ commit: late, status: 'success' }, { id: 'build-late' })).toMatchObject({
        status: 202,
        json: { delivered: 0 },
      });
      expect(await resume(stale)).toBe(`no build of ${late} reported in time`);
      const next = await (await client()).callTool({ name: 'await_build', arguments: { commit: late } });
      expect(textOf(next)).toBe(`built ${late}: success (event build-late)`);
    },
    60_000,
  );

  it.skipIf(!ledger)(
    'refuses a wrong signature, an old timestamp, a bad body and an unknown event with problem+json',
    async () => {
      const sha = commit();
      const waiting = await waitFor(sha);
      const forged = await send({ commit: sha, status: 'success' }, { secret: WRONG_SECRET });
      expect(forged).toMatchObject({ status: 401, type: 'application/problem+json', json: { status: 401 } });
      expect(forged.json.detail).toMatch(/signature/);
      const old = await send({ commit: sha, status: 'success' }, { at: new Date(Date.now() - 10 * 60_000) });
      expect(old).toMatchObject({ status: 401, type: 'application/problem+json' });
      expect(old.json.detail).toMatch(/timestamp/);
      const bad = await send({ commit: sha, status: 'green' });
      expect(bad).toMatchObject({
        status: 422,
        type: 'application/problem+json',
        json: { errors: [{ pointer: '#/data/status' }] },
      });
      expect(bad.json.detail).toMatch(/^data\.status: /);
      // Authenticated first (no secret signs deploy.done), then unknown.
      expect(await send({ commit: sha }, { event: 'deploy.done' })).toMatchObject({ status: 401 });
      const unknown = await fetch(eventsUrl('deploy.done'), {
        method: 'POST',
        headers: { authorization: `Bearer ${token('ci')}` },
        body: JSON.stringify({ data: {} }),
      });
      expect(unknown.status).toBe(404);
      expect(unknown.headers.get('content-type')).toBe('application/problem+json');
      // None of them reached the instance.
      expect(
        (await (await client()).callTool({ name: 'baton_requests', arguments: {} })).structuredContent,
      ).toMatchObject({
        requests: expect.arrayContaining([expect.objectContaining({ id: waiting, status: 'waiting' })]),
      });
    },
  );

  it.skipIf(!ledger)('takes a bearer token with the scope baton:events, refuses one without it (403)', async () => {
    const sha = commit();
    const waiting = await waitFor(sha);
    const post = (bearer: string) =>
      fetch(eventsUrl('build.done'), {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}` },
        body: JSON.stringify({ id: 'bearer-1', data: { commit: sha, status: 'success' } }),
      });
    const refused = await post(token('alice'));
    expect(refused.status).toBe(403);
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    expect(((await refused.json()) as { detail: string }).detail).toMatch(/baton:events/);
    const unsigned = await fetch(eventsUrl('build.done'), { method: 'POST', body: '{}' });
    expect(unsigned.status).toBe(401);
    const accepted = await post(token('ci'));
    expect(accepted.status).toBe(202);
    expect(await accepted.json()).toEqual({ delivered: 1, id: 'bearer-1' });
    expect(await resume(waiting)).toBe(`built ${sha}: success (event bearer-1)`);
  });

  it.skipIf(!ledger)(
    'tells a sender with the right secret that its body is not JSON (400), never that the signature is wrong',
    async () => {
      const notJson = await send(undefined, { raw: 'status=success' });
      expect(notJson).toMatchObject({ status: 400, type: 'application/problem+json', json: { status: 400 } });
      expect(notJson.json.detail).toMatch(/not JSON/);
      // A byte order mark is part of the signed bytes: kept for the signature, then not JSON.
      const bom = await send(undefined, {
        raw: `\uFEFF${JSON.stringify({ data: { commit: 'c', status: 'success' } })}`,
      });
      expect(bom).toMatchObject({ status: 400, type: 'application/problem+json' });
      // Bytes that are not UTF-8 are no JSON either, whatever their signature.
      const binary = await send(undefined, { raw: Buffer.from([0x7b, 0xff, 0xfe, 0x7d]) });
      expect(binary).toMatchObject({ status: 400, type: 'application/problem+json' });
      // The wrong secret over the same text still is a bad signature.
      expect(await send(undefined, { raw: 'status=success', secret: WRONG_SECRET })).toMatchObject({ status: 401 });
    },
  );

  it.skipIf(!ledger)(
    'refuses a name without a secret in the words of a wrong secret, so names cannot be probed',
    async () => {
      const data = { commit: commit(), status: 'success' };
      // deploy.done has no secret; build.done has one, and this is not it.
      const unsigned = await send(data, { event: 'deploy.done', secret: WRONG_SECRET });
      const wrong = await send(data, { event: 'build.done', secret: WRONG_SECRET });
      expect(unsigned).toMatchObject({ status: 401, type: 'application/problem+json' });
      expect(unsigned.json).toEqual(wrong.json);
      expect(unsigned.json.detail).not.toMatch(/configured/);
      // An old timestamp reads the same for both too (it is checked for a name without a secret).
      const at = new Date(Date.now() - 10 * 60_000);
      const oldUnsigned = await send(data, { event: 'deploy.done', at });
      const oldWrong = await send(data, { event: 'build.done', at, secret: WRONG_SECRET });
      expect(oldUnsigned.json).toEqual(oldWrong.json);
      expect(oldUnsigned.json.detail).toMatch(/timestamp/);
    },
  );

  it.skipIf(!ledger || name !== 'SQLite')(
    'answers what the server refuses before the route (413 declared or streamed, a foreign Origin) as problem+json',
    async () => {
      // A signed 1.5 MiB event, its length declared.
      const big = JSON.stringify({ data: { commit: 'c', status: 'success', pad: 'x'.repeat(1.5 * 1024 * 1024) } });
      const declared = await send(undefined, { raw: big });
      expect(declared).toMatchObject({
        status: 413,
        type: 'application/problem+json',
        json: { status: 413, reason: 'too_large', detail: expect.stringMatching(/exceeds 1048576 bytes/) },
      });
      // The same, streamed (chunked: no length to refuse it by): refused once the limit is passed.
      const streamed = await fetch(eventsUrl('build.done'), {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token('ci')}` },
        body: new ReadableStream({
          start(controller) {
            controller.enqueue(new TextEncoder().encode(big));
            controller.close();
          },
        }),
        duplex: 'half',
      } as RequestInit);
      expect(streamed.status).toBe(413);
      expect(streamed.headers.get('content-type')).toBe('application/problem+json');
      expect(((await streamed.json()) as { reason: string }).reason).toBe('too_large');
      // A foreign Origin (DNS-rebinding protection), with node:http: fetch sets its own.
      const foreign = await new Promise<{ status: number; type: string | undefined; body: any }>((resolve, reject) => {
        const req = httpRequest(
          eventsUrl('build.done'),
          { method: 'POST', headers: { origin: 'http://evil.example', 'content-type': 'application/json' } },
          (res) => {
            let text = '';
            res.on('data', (chunk) => {
              text += chunk;
            });
            res.on('end', () =>
              resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], body: JSON.parse(text) }),
            );
          },
        );
        req.on('error', reject);
        req.end('{"data":{}}');
      });
      expect(foreign).toMatchObject({
        status: 403,
        type: 'application/problem+json',
        body: { status: 403, reason: 'forbidden' },
      });
      // GET: 405 with Allow, problem+json.
      const get = await fetch(eventsUrl('build.done'));
      expect(get.status).toBe(405);
      expect(get.headers.get('allow')).toBe('POST');
      expect(get.headers.get('content-type')).toBe('application/problem+json');
    },
  );

  it.skipIf(!ledger || name !== 'SQLite')(
    'sends a signed event with baton send-event',
    async () => {
      const sha = commit();
      const waiting = await waitFor(sha);
      const data = JSON.stringify({ commit: sha, status: 'success' });
      const sent = await runCli([
        'send-event',
        'build.done',
        '--data',
        data,
        '--http',
        server!.url.href,
        '--secret',
        SECRET,
        '--id',
        'cli-1',
      ]);
      expect(sent).toMatchObject({ code: 0, stderr: '' });
      expect(JSON.parse(sent.stdout)).toEqual({ delivered: 1, id: 'cli-1' });
      expect(await resume(waiting)).toBe(`built ${sha}: success (event cli-1)`);
      const refused = await runCli([
        'send-event',
        'build.done',
        '--data',
        '{"commit":1}',
        '--http',
        server!.url.href,
        '--secret',
        SECRET,
      ]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/^baton: the server refused the event \(HTTP 422\): data\.commit: .*\n$/);
      const badFlag = await runCli(['send-event', 'build.done', '--data', 'nope', '--http', server!.url.href]);
      expect(badFlag.code).toBe(2);
      expect(badFlag.stderr.trim().split('\n')).toHaveLength(1);
    },
    60_000,
  );
});
