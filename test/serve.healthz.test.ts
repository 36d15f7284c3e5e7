/**
 * `baton serve --http`: `GET /healthz` and `GET /metrics`, on real processes
 * over loopback HTTP. With a SQLite ledger: the counters move as the SDK
 * client plays a flow (redeemed, retried, replayed, a tampered state by its
 * reason), `/metrics` is well-formed Prometheus text, both answer without the
 * bearer token `/mcp` demands, keep the Host check, and say nothing of
 * principals, tokens or paths. With PostgreSQL behind a TCP proxy: `/healthz`
 * turns 503 `ledger_unavailable` while the proxy refuses connections and 200
 * again once it accepts, without a restart. Nothing asserts a duration.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestDatabase } from '../packages/store/test/helpers/postgres.js';
import { tcpProxy } from '../packages/store/test/helpers/tcpProxy.js';
import {
  connectHttp,
  expectInputRequired,
  protocolError,
  type ServeProcess,
  sleep,
  startServe,
  textOf,
  toolRound,
} from './helpers/mcpClients.js';

const TOKEN = `tok-${randomBytes(16).toString('hex')}`;
const PRINCIPAL = 'alice-observability';
const keys = () => ({ BATON_KEYS: randomBytes(32).toString('base64url') });

// biome-ignore lint/suspicious/noExplicitAny: JSON bodies under test
async function getJson(base: URL, path: string): Promise<{ status: number; body: any; text: string }> {
  const response = await fetch(new URL(path, base));
  const text = await response.text();
  return { status: response.status, body: JSON.parse(text), text };
}

/** One Prometheus text sample or comment line, as the 0.0.4 format allows it. */
const SAMPLE =
  /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*",?)*\})? (-?[0-9.eE+-]+|NaN|\+Inf|-Inf)$/;
const HELP = /^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .*$/;
const TYPE = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|summary|histogram|untyped)$/;

/** Parse exposition text strictly: every line a HELP, a TYPE or a sample of the family just typed. */
function parsePrometheus(text: string): Map<string, number> {
  expect(text.endsWith('\n')).toBe(true);
  const values = new Map<string, number>();
  const typed = new Map<string, string>();
  let family = '';
  for (const line of text.slice(0, -1).split('\n')) {
    const help = HELP.exec(line);
    if (help) {
      family = help[1]!;
      continue;
    }
    const type = TYPE.exec(line);
    if (type) {
      expect(type[1]).toBe(family);
      expect(typed.has(family)).toBe(false);
      typed.set(family, type[2]!);
      continue;
    }
    const sample = SAMPLE.exec(line);
    if (!sample) throw new Error(`not a Prometheus line: ${JSON.stringify(line)}`);
    const name = sample[1]!;
    expect(name.startsWith('baton_')).toBe(true);
    expect([family, `${family}_sum`, `${family}_count`]).toContain(name);
    if (typed.get(family) === 'counter') expect(family.endsWith('_total')).toBe(true);
    values.set(`${name}${sample[2] ?? ''}`, Number(sample[4]));
  }
  return values;
}

async function metrics(base: URL): Promise<Map<string, number>> {
  const response = await fetch(new URL('/metrics', base));
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  return parsePrometheus(await response.text());
}

/** A raw GET with a chosen Host header (fetch does not let one set it). */
function getWithHost(url: URL, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'GET', headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.once('error', reject);
    req.end();
  });
}

describe('baton serve --http: /healthz and /metrics with a SQLite ledger', () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-healthz-'));
  const tokens = join(dir, 'tokens.json');
  let server: ServeProcess;

  beforeAll(async () => {
    writeFileSync(tokens, JSON.stringify({ [TOKEN]: PRINCIPAL }));
    server = await startServe(
      [
        'examples/approvals',
        '--http',
        '127.0.0.1:0',
        '--ledger',
        `sqlite:${join(dir, 'ledger.db')}`,
        '--auth-tokens',
        tokens,
      ],
      keys(),
    );
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers 200 before any round, without the token /mcp demands', async () => {
    const health = await getJson(server.url, '/healthz');
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({
      status: 'ok',
      ledger: {
        driver: 'sqlite',
        redemptions: { redeemed: 0, retried: 0, inProgress: 0, replayed: 0 },
        outcomesRecorded: 0,
      },
      serving: { rounds: { complete: 0, input_required: 0, error: 0 } },
    });
    expect(health.body.uptimeSeconds).toBeGreaterThanOrEqual(0);
    const mcp = await fetch(server.url, {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json' },
    });
    expect(mcp.status).toBe(401);
  });

  it('counts a flow, a retry, a replay and a tampered state, in /healthz and /metrics', async () => {
    const { client } = await connectHttp(server.url, { token: TOKEN });
    const args = { version: '4.2.0' };
    const answers = {
      confirm_deploy: { action: 'accept', content: { confirm: true } },
      change_ticket: { action: 'accept', content: { ticket: 'CHG-42' } },
    };
    const first = expectInputRequired(await toolRound(client, { name: 'deploy_production', arguments: args }));
    const final = {
      name: 'deploy_production',
      arguments: args,
      requestState: first.requestState,
      inputResponses: answers,
    };
    expect(textOf((await toolRound(client, final)) as { content?: unknown })).toContain('Deployed 4.2.0');

    let health = (await getJson(server.url, '/healthz')).body;
    expect(health.ledger.redemptions).toEqual({ redeemed: 1, retried: 0, inProgress: 0, replayed: 0 });
    expect(health.ledger.outcomesRecorded).toBe(1);
    expect(health.ledger.redeemLatency.count).toBe(1);
    expect(health.serving.rounds).toEqual({ complete: 1, input_required: 1, error: 0 });

    // The same final round again, byte for byte: answered from the recorded outcome.
    expect(textOf((await toolRound(client, final)) as { content?: unknown })).toContain('Deployed 4.2.0');
    // The same state with other answers: replayed.
    const replayed = await protocolError(
      toolRound(client, {
        ...final,
        inputResponses: { ...answers, change_ticket: { action: 'accept', content: { ticket: 'CHG-43' } } },
      }),
    );
    expect(replayed).toMatchObject({ code: -32602, data: { reason: 'replayed' } });
    // A tampered state: refused for whichever reason its bytes give.
    const s = first.requestState;
    const middle = Math.floor(s.length / 2);
    const tampered = `${s.slice(0, middle)}${s[middle] === 'A' ? 'B' : 'A'}${s.slice(middle + 1)}`;
    const bad = await protocolError(toolRound(client, { ...final, requestState: tampered }));
    expect(bad.code).toBe(-32602);
    const reason: string = bad.data.reason;
    expect(reason).not.toBe('replayed');
    await client.close();

    const response = await getJson(server.url, '/healthz');
    health = response.body;
    expect(health.ledger.redemptions).toEqual({ redeemed: 1, retried: 1, inProgress: 0, replayed: 1 });
    expect(health.serving.rounds.complete).toBe(2);
    expect(health.serving.invalidState).toEqual({ replayed: 1, [reason]: 1 });
    // Nothing about who called, with what, or where the ledger lives.
    for (const secret of [PRINCIPAL, TOKEN, dir, 'CHG-42', first.requestState]) {
      expect(response.text).not.toContain(secret);
    }

    const m = await metrics(server.url);
    expect(m.get('baton_rounds_total{outcome="complete"}')).toBe(2);
    expect(m.get('baton_rounds_total{outcome="input_required"}')).toBe(1);
    expect(m.get('baton_invalid_state_total{reason="replayed"}')).toBe(1);
    expect(m.get(`baton_invalid_state_total{reason="${reason}"}`)).toBe(1);
    expect(m.get('baton_ledger_redemptions_total{result="redeemed"}')).toBe(1);
    expect(m.get('baton_ledger_redemptions_total{result="retried"}')).toBe(1);
    expect(m.get('baton_ledger_redemptions_total{result="replayed"}')).toBe(1);
    expect(m.get('baton_ledger_outcomes_recorded_total')).toBe(1);
    expect(m.get('baton_ledger_redeem_duration_seconds_count')).toBe(3);
    expect(m.get('baton_ledger_up')).toBe(1);
    expect(m.get('baton_round_errors_total{kind="ledger_unavailable"}')).toBe(0);
  });

  it('keeps the Host check, refuses other methods and unknown paths', async () => {
    const healthz = new URL('/healthz', server.url);
    expect(await getWithHost(healthz, healthz.host)).toBe(200);
    expect(await getWithHost(healthz, 'evil.example')).toBe(403);
    expect(await getWithHost(new URL('/metrics', server.url), 'evil.example:80')).toBe(403);
    expect((await fetch(healthz, { method: 'POST', body: 'x' })).status).toBe(405);
    expect((await fetch(new URL('/healthz/', server.url))).status).toBe(404);
  });
});

const pgUrl = inject('batonPgUrl');
const describeWithPg = pgUrl ? describe : describe.skip;

describeWithPg('baton serve --http: /healthz with a PostgreSQL ledger that goes away', () => {
  let server: ServeProcess | undefined;
  let drop: () => Promise<void> = async () => {};
  afterAll(async () => {
    await server?.stop();
    await drop();
  });

  /** Poll `/healthz` (bounded: 60 tries, 250 ms apart) until it answers `status`. */
  async function until(base: URL, status: number) {
    let last: Awaited<ReturnType<typeof getJson>> | undefined;
    for (let i = 0; i < 60; i++) {
      last = await getJson(base, '/healthz');
      if (last.status === status) return last;
      await sleep(250);
    }
    throw new Error(`/healthz never answered ${status}; last: ${last?.status} ${last?.text}`);
  }

  it('answers 503 ledger_unavailable while the database cannot be reached, 200 again after', async () => {
    const database = await createTestDatabase(pgUrl!);
    drop = database.drop;
    const proxy = await tcpProxy(new URL(database.url));
    const viaProxy = new URL(database.url);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    server = await startServe(['examples/approvals', '--http', '127.0.0.1:0', '--ledger', viaProxy.href], keys());

    const ok = await until(server.url, 200);
    expect(ok.body.ledger).toMatchObject({ driver: 'postgres', pool: { waiting: 0 } });
    expect(ok.body.ledger.batches).toMatchObject({ redeem: { sent: 0 }, outcome: { sent: 0 } });
    expect(ok.text).not.toContain(viaProxy.password || 'no-password-in-url');

    // A flow, so the batch counters move.
    const { client } = await connectHttp(server.url);
    const args = { version: '1.0.0' };
    const first = expectInputRequired(await toolRound(client, { name: 'deploy_production', arguments: args }));
    await toolRound(client, {
      name: 'deploy_production',
      arguments: args,
      requestState: first.requestState,
      inputResponses: {
        confirm_deploy: { action: 'accept', content: { confirm: true } },
        change_ticket: { action: 'accept', content: { ticket: 'CHG-7' } },
      },
    });
    const moved = (await getJson(server.url, '/healthz')).body.ledger;
    // deploy_production's answer round has no side effect of its own: one write redeemed its
    // state with its outcome (a redemption batch), and no outcome was recorded on its own.
    expect(moved.batches.redeem).toMatchObject({ sent: 1, items: 1, largest: 1 });
    expect(moved.batches.outcome.items).toBe(0);
    expect(moved).toMatchObject({ redemptions: { redeemed: 1 }, outcomesRecorded: 1 });

    await proxy.down();
    const down = await until(server.url, 503);
    expect(down.body).toEqual({ status: 'unavailable', reason: 'ledger_unavailable' });
    expect((await metrics(server.url)).get('baton_ledger_up')).toBe(0);

    // A round while it is down: -32000, counted.
    const again = expectInputRequired(await toolRound(client, { name: 'deploy_production', arguments: args }));
    const refused = await protocolError(
      toolRound(client, {
        name: 'deploy_production',
        arguments: args,
        requestState: again.requestState,
        inputResponses: {
          confirm_deploy: { action: 'accept', content: { confirm: true } },
          change_ticket: { action: 'accept', content: { ticket: 'CHG-8' } },
        },
      }),
    );
    expect(refused.code).toBe(-32000);
    await client.close();

    await proxy.up();
    const back = await until(server.url, 200);
    expect(back.body.ledger.unavailableErrors).toBeGreaterThanOrEqual(1);
    expect(back.body.ledger.lastErrorAt).toEqual(expect.any(Number));
    expect(back.body.serving.failures.ledger_unavailable).toBe(1);
    const m = await metrics(server.url);
    expect(m.get('baton_ledger_up')).toBe(1);
    expect(m.get('baton_round_errors_total{kind="ledger_unavailable"}')).toBe(1);
    expect(m.get('baton_ledger_batches_total{kind="redeem"}')).toBeGreaterThanOrEqual(1);
  });
});
