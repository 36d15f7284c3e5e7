/**
 * `baton serve --otlp URL`: two real `baton serve` processes (the built CLI) sharing one SQLite
 * ledger, and a third on a ledger of its own for the scheduler, export their spans over OTLP/HTTP
 * to a receiver on loopback in this test, which reads what the SDK's exporter posts
 * (`application/json`, the OTLP/JSON encoding: ids as hex strings). The real SDK client plays
 * `refund_request` (two rounds: the state sealed, then opened, redeemed and its durable step run),
 * `expense_approval` (alice's call with a W3C `traceparent` header on one instance, bob's
 * hand-over to dave and dave's decision through the HTTP API on the other, alice's `baton_resume`
 * there from another trace of hers, in `_meta`) and `quick_approval` (a `_meta` traceparent, then
 * the scheduler's timer with nobody present). Asserted: the rounds of one instance are one trace
 * (a later round is the child of the first, whoever plays it and wherever), a caller's
 * `traceparent` is the parent of the round it sent (with a link to the instance's trace when it
 * is another), the hand-over, the decision and the round it plays join the requester's trace,
 * the spans carry the flow, the `via`, the states before and after, the outcome and the MCP
 * conventions' attributes. The scheduler's instance also POSTs its outbox to a webhook here (the
 * first POST answered 503): each attempt is a CLIENT span with the HTTP conventions' attributes,
 * in the instance's trace as the child of the round that raised it, whose `traceparent` went with
 * the POST. `deploy_production` waits for CI's event, which comes:
 * its delivery is a span in the instance's trace, the round it plays its child. The metrics
 * exported to `/v1/metrics` (every 300 ms) carry the figures `/metrics` shows: rounds by outcome,
 * redemptions, events delivered, decisions waiting, the outbox, the scheduler's timers and lag.
 * A fourth `baton serve`, without `--otlp`, exports nothing; no principal, token or answer is in
 * the export in clear.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKey } from '@baton/engine';
import { type Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  expectInputRequired,
  newClient,
  recordingFetch,
  runCli,
  type ServeProcess,
  startServe,
  textOf,
  toolRound,
} from './helpers/mcpClients.js';

const ENGINE_VERSION = (
  JSON.parse(readFileSync(new URL('../packages/engine/package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/** One span as OTLP/JSON carries it. */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: number;
  links?: { traceId: string; spanId: string }[];
  attributes?: { key: string; value: Record<string, unknown> }[];
}

/** One data point of a metric, as OTLP/JSON carries it. */
interface MetricPoint {
  attributes?: OtlpSpan['attributes'];
  asInt?: string | number;
  asDouble?: number;
}
/** One metric, as OTLP/JSON carries it: a sum (counters, up-down counters) or a gauge. */
interface OtlpMetric {
  name: string;
  unit?: string;
  description?: string;
  sum?: { dataPoints: MetricPoint[]; isMonotonic?: boolean; aggregationTemporality?: number };
  gauge?: { dataPoints: MetricPoint[] };
}
/** One metrics export request's body. */
interface MetricsExport {
  resourceMetrics?: {
    resource?: { attributes?: OtlpSpan['attributes'] };
    scopeMetrics?: { scope?: { name: string; version?: string }; metrics?: OtlpMetric[] }[];
  }[];
}

const dir = mkdtempSync(join(tmpdir(), 'baton-otel-'));
const ledger = `sqlite:${join(dir, 'ledger.db')}`;
const BATON_KEYS = generateKey();
const token = (name: string) => `${name}-token-${'y'.repeat(24)}`;
const tokensFile = join(dir, 'tokens.json');
writeFileSync(
  tokensFile,
  JSON.stringify({
    [token('alice')]: { principal: 'alice', roles: ['manager'] },
    [token('bob')]: { principal: 'bob', roles: ['manager'] },
    [token('dave')]: { principal: 'dave', roles: [] },
    [token('ci')]: { principal: 'ci-bot', scopes: ['baton:events'] },
  }),
);

// The receiver: every export request's body, decoded (spans and metrics apart).
const exports: unknown[] = [];
const metricExports: MetricsExport[] = [];
const rawBodies: string[] = [];
// The webhook receiver of --notify-webhook (instance 2): each POST's traceparent and type; the first one is answered 503.
const hooks: { traceparent: string | undefined; type: string; status: number }[] = [];
let receiver: Server;
let otlp = '';
const servers: ServeProcess[] = [];
const clients: Client[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    req.on('end', () => {
      const json = req.headers['content-type']?.startsWith('application/json');
      if (req.url === '/otlp/v1/traces' && json) {
        rawBodies.push(body);
        exports.push(JSON.parse(body));
      }
      if (req.url === '/otlp/v1/metrics' && json) {
        rawBodies.push(body);
        metricExports.push(JSON.parse(body) as MetricsExport);
      }
      if (req.url === '/hook') {
        const status = hooks.length === 0 ? 503 : 200;
        hooks.push({ traceparent: req.headers.traceparent as string | undefined, type: JSON.parse(body).type, status });
        res.writeHead(status);
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  otlp = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/otlp`;
  const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const serve = () =>
    startServe(
      [
        'examples/approvals',
        '--http',
        '127.0.0.1:0',
        '--ledger',
        ledger,
        '--auth-tokens',
        tokensFile,
        '--wait-in-call',
        '0',
        '--otlp',
        otlp,
      ],
      { BATON_KEYS, OTEL_BSP_SCHEDULE_DELAY: '100', OTEL_METRIC_EXPORT_INTERVAL: '300' },
    );
  // One after the other: the first creates the ledger's schema.
  servers.push(await serve());
  servers.push(await serve());
  // The scheduler's round: a flow whose decision times out in 3 s, on a ledger of its own.
  servers.push(
    await startServe(
      [
        'test/fixtures/timer-flows',
        '--http',
        '127.0.0.1:0',
        '--ledger',
        `sqlite:${join(dir, 'timers.db')}`,
        '--auth-tokens',
        tokensFile,
        '--notify-webhook',
        hook,
        '--wait-in-call',
        '0',
        '--otlp',
        otlp,
      ],
      { BATON_KEYS, OTEL_BSP_SCHEDULE_DELAY: '100', OTEL_METRIC_EXPORT_INTERVAL: '300' },
    ),
  );
  // Without --otlp, with the SDK's own environment pointing at the receiver: nothing is exported.
  servers.push(
    await startServe(['examples/approvals', '--http', '127.0.0.1:0', '--auth-tokens', tokensFile], {
      BATON_KEYS,
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp,
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_METRICS_EXPORTER: 'otlp',
      OTEL_METRIC_EXPORT_INTERVAL: '300',
    }),
  );
}, 120_000);
afterAll(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
  await Promise.all(servers.map((server) => server.stop()));
  await new Promise((resolve) => receiver?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** A client of instance `i` as `who`, sending `headers` (a `traceparent`, say) on every request. */
async function connect(i: number, who: string, headers: Record<string, string> = {}): Promise<Client> {
  const { client } = newClient();
  const recorder = recordingFetch([servers[i]!.url], { authorization: `Bearer ${token(who)}`, ...headers });
  await client.connect(new StreamableHTTPClientTransport(servers[i]!.url, { fetch: recorder.fetch }));
  clients.push(client);
  return client;
}

function spans(): OtlpSpan[] {
  return exports.flatMap((e) =>
    ((e as { resourceSpans?: { scopeSpans?: { spans?: OtlpSpan[] }[] }[] }).resourceSpans ?? []).flatMap((r) =>
      (r.scopeSpans ?? []).flatMap((s) => s.spans ?? []),
    ),
  );
}

function attr(span: OtlpSpan, key: string): unknown {
  const value = span.attributes?.find((a) => a.key === key)?.value;
  if (!value) return undefined;
  if ('intValue' in value) return Number(value.intValue);
  return Object.values(value)[0];
}

/** The round spans of instance `fid`, by round number then start, once `count` arrived (bounded wait). */
async function roundsOf(fid: string, count: number): Promise<OtlpSpan[]> {
  const until = Date.now() + 20_000;
  for (;;) {
    const found = spans().filter((s) => s.name === 'baton.round' && attr(s, 'baton.instance.id') === fid);
    if (found.length >= count)
      return found.sort((a, b) => Number(attr(a, 'baton.round')) - Number(attr(b, 'baton.round')));
    if (Date.now() > until) throw new Error(`only ${found.length} round spans of ${fid} arrived`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** One process's collection: its `service.instance.id`, scopes and metrics by name. */
interface Collection {
  instance: string;
  scopes: { name: string; version?: string }[];
  metrics: Map<string, OtlpMetric>;
}

function collections(): Collection[] {
  return metricExports.flatMap((e) =>
    (e.resourceMetrics ?? []).map((r) => ({
      instance: String(r.resource?.attributes?.find((a) => a.key === 'service.instance.id')?.value.stringValue),
      scopes: (r.scopeMetrics ?? []).flatMap((s) => (s.scope ? [s.scope] : [])),
      metrics: new Map((r.scopeMetrics ?? []).flatMap((s) => s.metrics ?? []).map((m) => [m.name, m])),
    })),
  );
}

/** The value of `metric`'s data point whose attributes are exactly `attributes`. */
function pointOf(metric: OtlpMetric | undefined, attributes: Record<string, string> = {}): number | undefined {
  const points = metric?.sum?.dataPoints ?? metric?.gauge?.dataPoints ?? [];
  const wanted = Object.entries(attributes).sort();
  const point = points.find((p) => {
    const got = (p.attributes ?? []).map((a) => [a.key, String(Object.values(a.value)[0])]).sort();
    return JSON.stringify(got) === JSON.stringify(wanted);
  });
  if (!point) return undefined;
  return point.asDouble ?? Number(point.asInt);
}

/** The latest collection that passes `test` (bounded wait). */
async function collectionWhere(test: (c: Collection) => boolean): Promise<Collection> {
  const until = Date.now() + 20_000;
  for (;;) {
    const found = collections().reverse().find(test);
    if (found) return found;
    if (Date.now() > until) throw new Error('no such metrics export arrived');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** `GET /metrics` of instance `i`: a sample's value by name and labels. */
async function scrape(i: number): Promise<(name: string, labels?: Record<string, string>) => number | undefined> {
  const text = await (await fetch(new URL('/metrics', servers[i]!.url))).text();
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    const match = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) continue;
    const labels = [...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map(([, k, v]) => `${k}=${v}`).sort();
    samples.set(`${match[1]}{${labels.join(',')}}`, Number(match[3]));
  }
  return (name, labels = {}) =>
    samples.get(
      `${name}{${Object.entries(labels)
        .map(([k, v]) => `${k}=${v}`)
        .sort()
        .join(',')}}`,
    );
}

/** The spans that pass `test`, once `enough` says so of them (bounded wait). */
async function spansWhere(test: (s: OtlpSpan) => boolean, enough: (found: OtlpSpan[]) => boolean): Promise<OtlpSpan[]> {
  const until = Date.now() + 20_000;
  for (;;) {
    const found = spans().filter(test);
    if (enough(found)) return found;
    if (Date.now() > until) throw new Error(`only ${found.length} such spans arrived`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const childrenOf = (parent: OtlpSpan) => spans().filter((s) => s.parentSpanId === parent.spanId);

describe('baton serve --otlp', () => {
  it('exports one trace per flow instance: the rounds, the state opened and sealed, the redemption, the step', async () => {
    const client = await connect(0, 'alice');
    const args = { orderId: 'A-1', amount: 50 };
    const first = expectInputRequired(await toolRound(client, { name: 'refund_request', arguments: args }));
    const done = await toolRound(client, {
      name: 'refund_request',
      arguments: args,
      requestState: first.requestState,
      inputResponses: { reason: { action: 'accept', content: { reason: 'damaged', note: 'SECRET-NOTE-42' } } },
    });
    expect(textOf(done as { content?: unknown })).toMatch(/RF-/);

    const fid = await fidOf('refund_request');
    const [one, two] = await roundsOf(fid, 2);
    // One trace: the second round is the first's child (its context was kept in the sealed state).
    expect(two!.traceId).toBe(one!.traceId);
    expect(two!.parentSpanId).toBe(one!.spanId);
    expect(one!.parentSpanId ?? '').toBe('');
    expect(
      [one!, two!].map((s) => [
        attr(s, 'baton.flow'),
        attr(s, 'baton.round'),
        attr(s, 'baton.via'),
        attr(s, 'mcp.method.name'),
        attr(s, 'baton.state.before'),
        attr(s, 'baton.state.after'),
        attr(s, 'baton.outcome'),
      ]),
    ).toEqual([
      ['refund_request', 1, 'call', 'tools/call', undefined, 'reason', 'input_required'],
      ['refund_request', 2, 'call', 'tools/call', 'reason', expect.any(String), 'complete'],
    ]);
    expect(one!.kind).toBe(2); // SERVER
    expect(childrenOf(one!).map((s) => s.name)).toContain('baton.state.seal');
    const second = childrenOf(two!);
    expect(second.map((s) => s.name)).toEqual(expect.arrayContaining(['baton.state.open', 'baton.ledger.redeem']));
    expect(attr(second.find((s) => s.name === 'baton.ledger.redeem')!, 'baton.ledger.redemption')).toBe('redeemed');
    const step = second.find((s) => s.name === 'baton.step');
    expect(step && [attr(step, 'baton.step.key'), attr(step, 'baton.step.attempt')]).toEqual([
      expect.stringContaining('issueRefund'),
      1,
    ]);
    // The instrumentation scope: the engine, with its version.
    const scopes = exports.flatMap((e) =>
      (
        (e as { resourceSpans?: { scopeSpans?: { scope?: { name: string; version?: string } }[] }[] }).resourceSpans ??
        []
      )
        .flatMap((r) => r.scopeSpans ?? [])
        .map((scope) => scope.scope),
    );
    expect(scopes).toContainEqual({ name: '@baton/engine', version: ENGINE_VERSION });
    // A keyed hash of the principal, never the principal.
    expect(attr(one!, 'enduser.pseudo.id')).toMatch(/^[\w-]{16,}$/);
    expect(attr(one!, 'enduser.pseudo.id')).not.toContain('alice');
  });

  it('keeps one trace across people and instances, with the caller traceparent as the parent', async () => {
    const callerTrace = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const alice = await connect(0, 'alice', { traceparent: `00-${callerTrace}-${callerSpan}-01` });
    const result = await alice.callTool({
      name: 'expense_approval',
      arguments: { amount: 250, purpose: 'conference' },
    });
    const { id, status } = result.structuredContent as { id: string; status: string };
    expect(status).toBe('waiting');

    // Bob hands the decision to dave, who makes it, through the HTTP API of the other instance
    // (neither sends a trace context of his own).
    const post = (path: string, who: string, body: unknown) =>
      fetch(new URL(path, servers[1]!.url), {
        method: 'POST',
        headers: { authorization: `Bearer ${token(who)}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    expect((await post(`/api/decisions/${id}/delegate`, 'bob', { to: 'dave', reason: 'SECRET-REASON-7' })).status).toBe(
      200,
    );
    expect((await post(`/api/decisions/${id}`, 'dave', { action: 'accept', content: { approve: true } })).status).toBe(
      200,
    );
    // Alice comes back on that instance, from another trace of hers (in the request's _meta).
    const laterTrace = randomBytes(16).toString('hex');
    const laterSpan = randomBytes(8).toString('hex');
    const back = await connect(1, 'alice');
    const resumed = await back.callTool({
      name: 'baton_resume',
      arguments: { id },
      _meta: { traceparent: `00-${laterTrace}-${laterSpan}-01` },
    });
    expect(textOf(resumed)).toBe('Expense of 250 approved.');

    const rounds = await roundsOf(id, 3);
    const byVia = new Map(rounds.map((s) => [attr(s, 'baton.via'), s]));
    expect([...byVia.keys()].sort()).toEqual(['call', 'decide_api', 'resume']);
    // The requester's round: the caller's span is its parent.
    const call = byVia.get('call')!;
    expect(call.traceId).toBe(callerTrace);
    expect(call.parentSpanId).toBe(callerSpan);
    // Every round, on either instance, is in that trace.
    for (const round of rounds) {
      if (round !== byVia.get('resume')) expect(round.traceId).toBe(callerTrace);
    }
    // The round under another trace context is its child, linked to the instance's first round.
    const resume = byVia.get('resume')!;
    expect([resume.traceId, resume.parentSpanId]).toEqual([laterTrace, laterSpan]);
    expect(resume.links?.map((l) => [l.traceId, l.spanId])).toEqual([[callerTrace, call.spanId]]);
    // The decision recorded, in the trace too; the round it played is its child.
    const recorded = spans().find((s) => s.name === 'baton.decision.record' && attr(s, 'baton.instance.id') === id);
    expect(recorded).toBeDefined();
    expect(recorded!.traceId).toBe(callerTrace);
    expect(recorded!.parentSpanId).toBe(call.spanId);
    expect([attr(recorded!, 'baton.decision.key'), attr(recorded!, 'baton.via')]).toEqual([
      'manager_approval',
      'decide_api',
    ]);
    expect(byVia.get('decide_api')!.parentSpanId).toBe(recorded!.spanId);
    // The hand-over before it, in the trace too.
    const handed = spans().find((s) => s.name === 'baton.decision.delegate' && attr(s, 'baton.instance.id') === id);
    expect(handed && [handed.traceId, handed.parentSpanId, attr(handed, 'baton.via')]).toEqual([
      callerTrace,
      call.spanId,
      'delegate',
    ]);
    expect(attr(handed!, 'enduser.pseudo.id')).not.toBe(attr(recorded!, 'enduser.pseudo.id'));
    // The requester's round parked the instance; the decider's round wrote its end, compare-and-set.
    const parkOf = (round: OtlpSpan) => childrenOf(round).find((s) => s.name === 'baton.ledger.park');
    expect([attr(parkOf(call)!, 'baton.request.status'), attr(parkOf(call)!, 'baton.ledger.park.result')]).toEqual([
      'waiting',
      'parked',
    ]);
    expect(attr(parkOf(byVia.get('decide_api')!)!, 'baton.request.status')).toBe('completed');
    expect(attr(byVia.get('decide_api')!, 'baton.outcome')).toBe('complete');
    // The two instances are told apart by their resource.
    const instances = new Set(
      exports.flatMap((e) =>
        ((e as { resourceSpans?: { resource?: { attributes?: OtlpSpan['attributes'] } }[] }).resourceSpans ?? []).map(
          (r) => r.resource?.attributes?.find((a) => a.key === 'service.instance.id')?.value.stringValue,
        ),
      ),
    );
    expect(instances.size).toBe(2);
    const names = exports.flatMap((e) =>
      ((e as { resourceSpans?: { resource?: { attributes?: OtlpSpan['attributes'] } }[] }).resourceSpans ?? []).map(
        (r) => r.resource?.attributes?.find((a) => a.key === 'service.name')?.value.stringValue,
      ),
    );
    expect(new Set(names)).toEqual(new Set(['baton']));
  });

  it("joins the scheduler's round to the trace of the request's _meta traceparent", async () => {
    const callerTrace = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const alice = await connect(2, 'alice');
    const result = await alice.callTool({
      name: 'quick_approval',
      arguments: {},
      _meta: { traceparent: `00-${callerTrace}-${callerSpan}-01` },
    });
    const { id } = result.structuredContent as { id: string };
    // Nobody decides: the scheduler fires the deadline (3 s) with no client present.
    const [call, timer] = await roundsOf(id, 2);
    expect([attr(call!, 'baton.via'), attr(timer!, 'baton.via')]).toEqual(['call', 'timer']);
    expect(call!.traceId).toBe(callerTrace);
    expect(call!.parentSpanId).toBe(callerSpan);
    expect(timer!.traceId).toBe(callerTrace);
    expect(timer!.parentSpanId).toBe(call!.spanId);
    expect(timer!.kind).toBe(1); // INTERNAL: no client's request
    expect([attr(timer!, 'baton.state.before'), attr(timer!, 'baton.outcome')]).toEqual(['waiting', 'complete']);

    // The outbox's webhook attempts (the decision requested, the request ended): one CLIENT span
    // each, with the HTTP conventions' attributes, in the instance's trace as a child of the round
    // that raised it (the row kept its traceparent); its own traceparent went with the POST.
    const deliveries = await spansWhere(
      (s) => s.name === 'baton.outbox.deliver' && attr(s, 'baton.instance.id') === id,
      (found) =>
        found.some((s) => attr(s, 'baton.outbox.type') === 'request.ended') &&
        found.some((s) => attr(s, 'http.request.resend_count') === 1),
    );
    const port = (receiver.address() as AddressInfo).port;
    for (const delivery of deliveries) {
      expect(delivery.kind).toBe(3); // CLIENT
      expect([
        attr(delivery, 'http.request.method'),
        attr(delivery, 'server.address'),
        attr(delivery, 'server.port'),
        attr(delivery, 'baton.flow'),
      ]).toEqual(['POST', '127.0.0.1', port, 'quick_approval']);
      const raisedBy = attr(delivery, 'baton.outbox.type') === 'decision.requested' ? call! : timer!;
      expect([delivery.traceId, delivery.parentSpanId]).toEqual([callerTrace, raisedBy.spanId]);
      const sent = hooks.find((h) => h.traceparent === `00-${delivery.traceId}-${delivery.spanId}-01`);
      expect(sent && [sent.type, sent.status]).toEqual([
        attr(delivery, 'baton.outbox.type'),
        attr(delivery, 'http.response.status_code'),
      ]);
      // Never the URL's path, the body or a signature.
      expect(JSON.stringify(delivery.attributes)).not.toMatch(/\/hook|v1,|requester/);
    }
    // The first POST was answered 503: an error, retried (its resend count 1) and delivered.
    const failed = deliveries.find((s) => attr(s, 'http.response.status_code') === 503)!;
    expect(attr(failed, 'error.type')).toBe('503');
    const retried = deliveries.find(
      (s) => attr(s, 'baton.outbox.id') === attr(failed, 'baton.outbox.id') && s !== failed,
    );
    expect(retried && [attr(retried, 'http.request.resend_count'), attr(retried, 'http.response.status_code')]).toEqual(
      [1, 200],
    );
  }, 30_000);

  it('exports nothing without --otlp', async () => {
    const client = await connect(3, 'alice');
    const args = { version: '9.9.9' };
    expectInputRequired(await toolRound(client, { name: 'deploy_production', arguments: args }));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    // No other test plays deploy_production: none of its spans, from anywhere.
    expect(spans().filter((s) => attr(s, 'baton.flow') === 'deploy_production')).toEqual([]);
  });

  it('refuses an --otlp that is not an http(s) URL, in one line', async () => {
    const result = await runCli(['serve', 'examples/approvals', '--http', '127.0.0.1:0', '--otlp', 'localhost:4318'], {
      BATON_KEYS,
    });
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toMatch(/^baton: --otlp expects an http: or https: URL, got "localhost:4318"/);
  });

  it('exports the figures of /metrics as OpenTelemetry metrics: the same families, attributes and values', async () => {
    const alice = await connect(0, 'alice');
    // A decision that waits (nobody decides it), and an instance that waits for CI's event, which comes.
    const pending = await alice.callTool({ name: 'expense_approval', arguments: { amount: 90, purpose: 'books' } });
    expect((pending.structuredContent as { status: string }).status).toBe('waiting');
    const commit = randomBytes(4).toString('hex');
    const deploy = await alice.callTool({ name: 'deploy_production', arguments: { version: '2.0.0', commit } });
    expect((deploy.structuredContent as { status: string }).status).toBe('waiting');
    const sent = await fetch(new URL('/events/ci.finished', servers[0]!.url), {
      method: 'POST',
      headers: { authorization: `Bearer ${token('ci')}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: `build-${commit}`, data: { commit, status: 'success' } }),
    });
    expect(await sent.json()).toMatchObject({ delivered: 1 });

    // The event's delivery: a span in the instance's trace, the round it played its child.
    const deployId = (deploy.structuredContent as { id: string }).id;
    const [call, byEvent] = await roundsOf(deployId, 2);
    const delivery = spans().find((s) => s.name === 'baton.event.deliver' && attr(s, 'baton.instance.id') === deployId);
    expect(delivery && [delivery.traceId, delivery.parentSpanId]).toEqual([call!.traceId, call!.spanId]);
    expect([
      attr(delivery!, 'messaging.operation.type'),
      attr(delivery!, 'messaging.destination.name'),
      attr(delivery!, 'baton.flow'),
      attr(delivery!, 'baton.event.delivered'),
    ]).toEqual(['process', 'ci.finished', 'deploy_production', true]);
    expect([attr(byEvent!, 'baton.via'), byEvent!.traceId, byEvent!.parentSpanId]).toEqual([
      'event',
      call!.traceId,
      delivery!.spanId,
    ]);

    // A collection of instance 0 after all that (the only one that received an event), then its /metrics.
    const zero = await collectionWhere((c) => pointOf(c.metrics.get('baton.events.delivered')) === 1);
    const text = await scrape(0);
    const otel = (name: string, attributes?: Record<string, string>) => pointOf(zero.metrics.get(name), attributes);
    for (const outcome of ['complete', 'input_required', 'error']) {
      expect([outcome, otel('baton.rounds', { outcome })]).toEqual([outcome, text('baton_rounds_total', { outcome })]);
    }
    expect(otel('baton.rounds', { outcome: 'input_required' })).toBeGreaterThan(0);
    for (const result of ['redeemed', 'retried', 'in_progress', 'replayed']) {
      expect(otel('baton.ledger.redemptions', { result })).toBe(text('baton_ledger_redemptions_total', { result }));
    }
    expect(otel('baton.ledger.redemptions', { result: 'redeemed' })).toBeGreaterThan(0);
    expect(otel('baton.ledger.redeem.duration.count')).toBe(text('baton_ledger_redeem_duration_seconds_count'));
    expect(otel('baton.ledger.redeem.duration', { quantile: '0.5' })).toBe(
      text('baton_ledger_redeem_duration_seconds', { quantile: '0.5' }),
    );
    expect([otel('baton.events.delivered'), text('baton_events_delivered_total')]).toEqual([1, 1]);
    expect(otel('baton.events.received', { result: 'routed' })).toBe(
      text('baton_events_received_total', { result: 'routed' }),
    );
    expect(otel('baton.decisions.waiting')).toBeGreaterThanOrEqual(1);
    expect(otel('baton.decisions.waiting')).toBe(text('baton_decisions_waiting'));
    expect(otel('baton.outbox.depth')).toBe(text('baton_outbox_depth'));
    expect(otel('baton.ledger.up')).toBe(1);
    // Kinds, units and descriptions: a counter is a cumulative monotonic sum, a backlog an up-down sum.
    const rounds = zero.metrics.get('baton.rounds')!;
    expect([rounds.unit, rounds.sum?.isMonotonic, rounds.sum?.aggregationTemporality]).toEqual(['{round}', true, 2]);
    expect(rounds.description).toBe('Rounds that produced an outcome, by outcome.');
    expect(zero.metrics.get('baton.decisions.waiting')?.sum?.isMonotonic).toBe(false);
    expect(zero.metrics.get('baton.uptime')?.gauge && zero.metrics.get('baton.uptime')?.unit).toBe('s');
    expect(zero.scopes).toContainEqual({ name: '@baton/adapters', version: expect.any(String) });

    // The scheduler's instance: timers fired and their lag.
    const timers = await collectionWhere(
      (c) => (pointOf(c.metrics.get('baton.timers.fired'), { result: 'fired' }) ?? 0) > 0,
    );
    const timerText = await scrape(2);
    const timer = (name: string, attributes?: Record<string, string>) => pointOf(timers.metrics.get(name), attributes);
    expect(timer('baton.timers.fired', { result: 'fired' })).toBe(
      timerText('baton_timers_fired_total', { result: 'fired' }),
    );
    expect(timer('baton.timer.lag')).toBe(timerText('baton_timer_lag_seconds_total'));
    expect(timer('baton.timer.lag.max')).toBe(timerText('baton_timer_lag_max_seconds'));
    expect(timers.metrics.get('baton.timer.lag')?.unit).toBe('s');
    expect(timer('baton.timers.due')).toBe(timerText('baton_timers_due'));
    // The three --otlp instances export metrics; the one without --otlp none.
    expect(new Set(collections().map((c) => c.instance)).size).toBe(3);
  });

  it('exports the metrics one last time on the way out (SIGTERM)', async () => {
    // Ten minutes between two exports: the only one that can arrive is the flush on the way out.
    const before = new Set(collections().map((c) => c.instance));
    const server = await startServe(
      ['examples/approvals', '--http', '127.0.0.1:0', '--ledger', `sqlite:${join(dir, 'flush.db')}`, '--otlp', otlp],
      { BATON_KEYS, OTEL_METRIC_EXPORT_INTERVAL: '600000' },
    );
    await fetch(new URL('/metrics', server.url));
    expect(collections().filter((c) => !before.has(c.instance))).toEqual([]);
    expect(await server.stop()).toBe(0);
    const last = await collectionWhere((c) => !before.has(c.instance));
    expect([last.metrics.has('baton.rounds'), pointOf(last.metrics.get('baton.ledger.up'))]).toEqual([true, 1]);
  });

  it('exports no principal, token or answer in clear', () => {
    const all = rawBodies.join('\n');
    expect(all.length).toBeGreaterThan(0);
    for (const secret of [
      token('alice'),
      token('bob'),
      token('dave'),
      'SECRET-NOTE-42',
      'SECRET-REASON-7',
      'conference',
      'books',
      token('ci'),
      BATON_KEYS,
    ]) {
      expect(all).not.toContain(secret);
    }
    // A principal as a word of its own (not inside a random id, where three letters may occur).
    for (const principal of ['alice', 'bob', 'dave', 'ci-bot']) {
      expect(all).not.toMatch(new RegExp(`(^|[^\\w-])${principal}([^\\w-]|$)`));
    }
  });
});

/** The instance id of the one round span of `flow` exported so far (bounded wait). */
async function fidOf(flow: string): Promise<string> {
  const until = Date.now() + 20_000;
  for (;;) {
    const span = spans().find((s) => s.name === 'baton.round' && attr(s, 'baton.flow') === flow);
    if (span) return String(attr(span, 'baton.instance.id'));
    if (Date.now() > until) throw new Error(`no round span of ${flow} arrived`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
