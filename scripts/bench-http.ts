/**
 * End-to-end HTTP benchmark (not a test), loopback only: `deploy_production`
 * served by `baton serve examples/approvals` (a child process; without a
 * ledger and with a SQLite ledger) against a baseline written by hand on the
 * bare SDK (McpServer + registerTool + `inputRequired`, `acceptedContent`,
 * the SDK's `createRequestStateCodec`; the same two legs and answers, served
 * by `createMcpHandler` on node:http in a child process the same way
 * `serveHttp` does). All three are driven by the official SDK client with
 * auto-driving elicitation handlers, interleaved in one run (warm-up, then N
 * iterations each, round-robin). Reports the median and p90 per completed
 * flow and the ratio of medians (Baton / baseline); writes
 * bench/reports/http.json.
 *
 * Run: `pnpm tsx scripts/bench-http.ts [iterations] [warmup]` (default 500 and 50;
 * or BENCH_HTTP_ITERATIONS / BENCH_HTTP_WARMUP). `BENCH_HTTP_CPU_PROF=<dir>` makes every
 * server write a V8 CPU profile into `<dir>` when it stops.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateKey } from '@baton/engine';
import { Client, type ElicitResult, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
  acceptedContent,
  createMcpHandler,
  createRequestStateCodec,
  hostHeaderValidationResponse,
  inputRequired,
  localhostAllowedHostnames,
  McpServer,
  originValidationResponse,
} from '@modelcontextprotocol/server';
import { z } from 'zod';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SELF = fileURLToPath(import.meta.url);
const CLI = join(ROOT, 'packages/adapters/src/cli/main.ts');
const BASELINE_FLAG = '--serve-baseline';

// ---------------------------------------------------------------------------
// The hand-written baseline server (runs in a child process).
// ---------------------------------------------------------------------------

interface DeployState {
  version: string;
  plan: string;
}

const confirmSchema = z.object({ confirm: z.boolean().describe('Deploy now?') });
const ticketSchema = z.object({ ticket: z.string().min(1).describe('Change ticket, e.g. CHG-1234') });

/** A fresh McpServer per request with the hand-written two-leg `deploy_production`. */
function baselineFactory(key: string) {
  const codec = createRequestStateCodec<DeployState>({
    key: Buffer.from(key, 'base64url'),
    ttlSeconds: 1800,
    bind: (ctx) => `${ctx.mcpReq.method}\0deploy_production\0${ctx.http?.authInfo?.clientId ?? 'anonymous'}`,
  });
  return () => {
    const server = new McpServer(
      { name: 'baseline', version: '1.0.0' },
      { requestState: { verify: (state, ctx) => codec.verify(state, ctx) } },
    );
    server.registerTool(
      'deploy_production',
      {
        title: 'Deploy to production',
        description: 'Deploy a version to production after a confirmation and a change ticket.',
        inputSchema: z.object({ version: z.string().min(1).describe('The version to deploy') }),
        annotations: { destructiveHint: true, openWorldHint: true },
      },
      async ({ version }, ctx) => {
        const state = ctx.mcpReq.requestState<DeployState>();
        if (state && typeof state === 'object' && state.version === version) {
          const responses = ctx.mcpReq.inputResponses;
          const confirmed = acceptedContent(responses, 'confirm_deploy', confirmSchema);
          const ticket = acceptedContent(responses, 'change_ticket', ticketSchema);
          if (confirmed?.confirm === true && ticket) {
            return {
              content: [{ type: 'text', text: `Deployed ${version} to production (change ticket ${ticket.ticket}).` }],
            };
          }
          return { content: [{ type: 'text', text: `Deployment of ${version} cancelled.` }] };
        }
        // Leg 1: compute the plan, then ask for both answers in one round.
        const plan = await Promise.resolve(`rolling update of 3 instances to ${version}`);
        return inputRequired({
          inputRequests: {
            confirm_deploy: inputRequired.elicit({
              message: `Deploy ${version} to production? Plan: ${plan}.`,
              requestedSchema: confirmSchema,
            }),
            change_ticket: inputRequired.elicit({
              message: 'Which change ticket covers this deployment?',
              requestedSchema: ticketSchema,
            }),
          },
          requestState: await codec.mint({ version, plan }, ctx),
        });
      },
    );
    return server;
  };
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

async function writeResponse(res: ServerResponse, response: Response): Promise<void> {
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (!response.body) {
    res.end();
    return;
  }
  res.flushHeaders();
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    res.write(value);
  }
  res.end();
}

/** Serve the baseline on 127.0.0.1 the way `serveHttp` does (node:http -> Fetch Request -> createMcpHandler). */
async function serveBaseline(key: string): Promise<void> {
  const mcp = createMcpHandler(baselineFactory(key), { maxRequestBodySize: 1024 * 1024 });
  const allowed = localhostAllowedHostnames();
  const server = createServer(async (req, res) => {
    try {
      const body = req.method !== 'GET' && req.method !== 'HEAD' ? await readBody(req) : undefined;
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) {
        if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
      }
      const request = new Request(new URL(req.url ?? '/', `http://127.0.0.1:${port}`), {
        method: req.method ?? 'GET',
        headers,
        ...(body ? { body: new Uint8Array(body) } : {}),
      });
      const rejected = hostHeaderValidationResponse(request, allowed) ?? originValidationResponse(request, allowed);
      await writeResponse(res, rejected ?? (await mcp.fetch(request)));
    } catch {
      res.destroy();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  process.stderr.write(`baseline: serving deploy_production at http://127.0.0.1:${port}/mcp\n`);
  process.once('SIGTERM', () => {
    server.close();
    server.closeAllConnections();
    void mcp.close().finally(() => process.exit(0));
  });
}

// ---------------------------------------------------------------------------
// The driver.
// ---------------------------------------------------------------------------

interface Child {
  url: URL;
  child: ChildProcess;
}

/** Spawn a server and wait (bounded) for its URL on stderr; later stderr is drained. */
async function spawnServer(args: string[], env: Record<string, string>): Promise<Child> {
  // BENCH_HTTP_CPU_PROF=dir: each server writes a V8 CPU profile there when it stops.
  const profile = process.env.BENCH_HTTP_CPU_PROF
    ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_HTTP_CPU_PROF}`]
    : [];
  const child = spawn(process.execPath, [...profile, '--import', 'tsx', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const url = await new Promise<URL>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start within 30 s:\n${stderr}`)), 30_000);
    const onData = (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /serving .* at (http:\/\/\S+)/.exec(stderr);
      if (match) {
        clearTimeout(timer);
        child.stderr!.off('data', onData);
        child.stderr!.resume();
        resolve(new URL(match[1]!));
      }
    };
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${stderr}`));
    });
  });
  return { url, child };
}

async function stop(server: Child): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  const exited = new Promise((resolve) => server.child.once('exit', resolve));
  server.child.kill('SIGTERM');
  const killer = setTimeout(() => server.child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(killer);
}

/** An SDK client with auto-driving elicitation: confirm, and a change ticket. */
async function connect(url: URL): Promise<Client> {
  const client = new Client(
    { name: 'bench-http', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: 'auto' } },
  );
  client.setRequestHandler('elicitation/create', async (request): Promise<ElicitResult> => {
    const properties = Object.keys(
      (request.params as { requestedSchema?: { properties?: object } }).requestedSchema?.properties ?? {},
    );
    return properties.includes('ticket')
      ? { action: 'accept', content: { ticket: 'CHG-1234' } }
      : { action: 'accept', content: { confirm: true } };
  });
  await client.connect(new StreamableHTTPClientTransport(url));
  return client;
}

interface Target {
  name: string;
  client: Client;
  samples: number[];
}

let flowCounter = 0;
async function runFlow(target: Target, record: boolean): Promise<void> {
  const version = `1.${flowCounter++}.0`;
  const start = performance.now();
  const result = await target.client.callTool({ name: 'deploy_production', arguments: { version } });
  const ms = performance.now() - start;
  const text = ((result.content ?? []) as { type: string; text?: string }[]).map((b) => b.text ?? '').join('');
  if (text !== `Deployed ${version} to production (change ticket CHG-1234).`) {
    throw new Error(`${target.name}: unexpected result ${JSON.stringify(result)}`);
  }
  if (record) target.samples.push(ms);
}

const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
};
const round2 = (n: number) => Math.round(n * 100) / 100;

async function main() {
  const iterations = Number(process.argv[2] ?? process.env.BENCH_HTTP_ITERATIONS ?? 500);
  const warmup = Number(process.argv[3] ?? process.env.BENCH_HTTP_WARMUP ?? 50);
  const key = generateKey();
  const dir = mkdtempSync(join(tmpdir(), 'baton-bench-http-'));
  const env = { BATON_KEYS: key };
  const servers: Child[] = [];
  const clients: Client[] = [];
  try {
    const [baseline, batonPlain, batonSqlite] = await Promise.all([
      spawnServer([SELF, BASELINE_FLAG], env),
      spawnServer([CLI, 'serve', 'examples/approvals', '--http', '127.0.0.1:0'], env),
      spawnServer(
        [CLI, 'serve', 'examples/approvals', '--http', '127.0.0.1:0', '--ledger', `sqlite:${join(dir, 'ledger.db')}`],
        env,
      ),
    ]);
    servers.push(baseline!, batonPlain!, batonSqlite!);
    const targets: Target[] = [];
    for (const [name, server] of [
      ['baseline (bare SDK)', baseline!],
      ['baton serve (no ledger)', batonPlain!],
      ['baton serve (SQLite ledger)', batonSqlite!],
    ] as const) {
      const client = await connect(server.url);
      clients.push(client);
      targets.push({ name, client, samples: [] });
    }

    for (let i = 0; i < warmup; i++) for (const target of targets) await runFlow(target, false);
    // Interleaved, rotating which goes first so no target always follows another.
    for (let i = 0; i < iterations; i++) {
      for (let k = 0; k < targets.length; k++) await runFlow(targets[(i + k) % targets.length]!, true);
    }

    const base = quantile(targets[0]!.samples, 0.5);
    const results = targets.map((target) => {
      const median = quantile(target.samples, 0.5);
      return {
        server: target.name,
        flows: target.samples.length,
        medianMs: round2(median),
        p90Ms: round2(quantile(target.samples, 0.9)),
        meanMs: round2(target.samples.reduce((a, b) => a + b, 0) / target.samples.length),
        ratioOfMedians: round2(median / base),
      };
    });
    console.table(results);
    mkdirSync(join(ROOT, 'bench/reports'), { recursive: true });
    writeFileSync(
      join(ROOT, 'bench/reports/http.json'),
      JSON.stringify(
        {
          node: process.version,
          date: new Date().toISOString(),
          flow: 'deploy_production (2 tools/call legs + 2 elicitations, auto-driving SDK client)',
          iterations,
          warmup,
          note: 'ratioOfMedians = median(Baton) / median(baseline); each target ran in its own child process on 127.0.0.1, interleaved round-robin in one run',
          results,
        },
        null,
        2,
      ),
    );
    console.log('wrote bench/reports/http.json');
  } finally {
    await Promise.allSettled(clients.map((client) => client.close()));
    await Promise.allSettled(servers.map(stop));
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv.includes(BASELINE_FLAG)) {
  await serveBaseline(process.env.BATON_KEYS!.split(',')[0]!);
} else {
  await main();
}
