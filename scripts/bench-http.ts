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
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateKey } from '@baton/engine';
import type { Client } from '@modelcontextprotocol/client';
import {
  createMcpHandler,
  hostHeaderValidationResponse,
  localhostAllowedHostnames,
  originValidationResponse,
} from '@modelcontextprotocol/server';
import {
  baselineFactory,
  type Child,
  CLI,
  connect,
  deployOnce,
  listenBaseline,
  quantile,
  ROOT,
  round2,
  spawnServer,
  stop,
} from './lib/benchServers.js';

const SELF = fileURLToPath(import.meta.url);
const BASELINE_FLAG = '--serve-baseline';

// ---------------------------------------------------------------------------
// The hand-written baseline server (runs in a child process; the flow is in lib/benchServers.ts).
// ---------------------------------------------------------------------------

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
  let port = 0; // known once listening, before any request
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
  port = await listenBaseline(server, () => mcp.close());
}

// ---------------------------------------------------------------------------
// The driver.
// ---------------------------------------------------------------------------

interface Target {
  name: string;
  client: Client;
  samples: number[];
}

let flowCounter = 0;
async function runFlow(target: Target, record: boolean): Promise<void> {
  const version = `1.${flowCounter++}.0`;
  const start = performance.now();
  await deployOnce(target.client, version, target.name);
  const ms = performance.now() - start;
  if (record) target.samples.push(ms);
}

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
