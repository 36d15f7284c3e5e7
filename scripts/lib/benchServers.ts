/**
 * Shared pieces of the HTTP benchmarks (`bench-http`, `bench-concurrency`):
 * the hand-written `deploy_production` on the bare SDK (the baseline Baton is
 * compared with) and the SDK "floor" (a no-op tool), served as the SDK's guide
 * teaches; spawning a server child process and waiting for its URL, stopping
 * it, reading a child's CPU time from /proc; and the official SDK client, either
 * with auto-driving elicitation handlers or answering each round itself.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, type ElicitResult, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { localhostHostValidation, localhostOriginValidation, toNodeHandler } from '@modelcontextprotocol/node';
import {
  acceptedContent,
  createMcpHandler,
  createRequestStateCodec,
  inputRequired,
  McpServer,
} from '@modelcontextprotocol/server';
import { z } from 'zod';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CLI = join(ROOT, 'packages/adapters/src/cli/main.ts');
/** The flags that make `bench-concurrency.ts` a server child: the hand-written baseline, the SDK floor. */
export const BASELINE_FLAG = '--serve-baseline';
export const FLOOR_FLAG = '--serve-floor';

interface DeployState {
  version: string;
  plan: string;
}

const confirmSchema = z.object({ confirm: z.boolean().describe('Deploy now?') });
const ticketSchema = z.object({ ticket: z.string().min(1).describe('Change ticket, e.g. CHG-1234') });

/**
 * A factory of fresh McpServers (one per request) with the hand-written two-leg
 * `deploy_production`: leg 1 computes a plan and asks for a confirmation and a change ticket in
 * one round, carrying `{ version, plan }` in the SDK's own signed `requestState` (bound to the
 * method, tool and principal); leg 2 verifies it and deploys.
 */
export function baselineFactory(key: string) {
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

/**
 * A factory of fresh McpServers (one per request) with one tool, `noop`, answering
 * `{ content: [{ type: 'text', text: 'ok' }] }`: the SDK's own cost of serving a `tools/call`.
 */
export function floorFactory() {
  return () => {
    const server = new McpServer({ name: 'floor', version: '1.0.0' });
    server.registerTool('noop', { description: 'Does nothing.' }, async () => ({
      content: [{ type: 'text', text: 'ok' }],
    }));
    return server;
  };
}

/**
 * Serve a per-request server factory as the SDK's serving guide has it: `createMcpHandler`
 * behind `toNodeHandler` on node:http, with the localhost Host and Origin guards; announces
 * its URL and stops on SIGTERM ({@link listenBaseline}).
 */
export async function serveGuided(factory: () => McpServer): Promise<void> {
  const handler = createMcpHandler(factory);
  const handle = toNodeHandler(handler);
  const validateHost = localhostHostValidation();
  const validateOrigin = localhostOriginValidation();
  const server = createServer((req, res) => {
    if (!validateHost(req, res) || !validateOrigin(req, res)) return;
    void handle(req, res);
  });
  await listenBaseline(server, () => handler.close());
}

/** A server child process and the endpoint it printed. */
export interface Child {
  readonly url: URL;
  readonly child: ChildProcess;
}

/**
 * Run a baseline server child: listen on 127.0.0.1 (a free port), announce the URL on stderr the
 * way `spawnServer` waits for it, and on SIGTERM end the connections, `close()` the handler and exit.
 * Resolves with the port.
 */
export async function listenBaseline(server: Server, close: () => Promise<void>): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  process.stderr.write(`baseline: serving deploy_production at http://127.0.0.1:${port}/mcp\n`);
  process.once('SIGTERM', () => {
    server.close();
    server.closeAllConnections();
    void close().finally(() => process.exit(0));
  });
  return port;
}

/**
 * Spawn a server (`node --import tsx ...args`, or `node ...loader ...args` with another `loader`,
 * e.g. the built CLI's export condition) and wait (bounded) for "serving ... at URL" on its
 * stderr; later stderr is drained. `BENCH_HTTP_CPU_PROF=dir` makes it write a V8 CPU profile there
 * when it stops.
 */
export async function spawnServer(
  args: string[],
  env: Record<string, string>,
  loader: string[] = ['--import', 'tsx'],
): Promise<Child> {
  const profile = process.env.BENCH_HTTP_CPU_PROF
    ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_HTTP_CPU_PROF}`]
    : [];
  const child = spawn(process.execPath, [...profile, ...loader, ...args], {
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

/** SIGTERM a server and wait for it to exit (SIGKILL after 5 s). */
export async function stop(server: Child): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  const exited = new Promise((resolve) => server.child.once('exit', resolve));
  server.child.kill('SIGTERM');
  const killer = setTimeout(() => server.child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(killer);
}

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** The fields of /proc/PID/stat after the command name (which may hold spaces); undefined once it has exited. */
export function procStat(pid: number | string): string[] | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** Clock ticks (from /proc) in milliseconds. */
export const ticksToMs = (ticks: number) => (ticks * 1000) / TICKS_PER_SECOND;

/** CPU time a process has used so far, in milliseconds, from /proc/PID/stat: user and system. */
export function cpuTimes(pid: number): { user: number; system: number } {
  const fields = procStat(pid);
  if (!fields) throw new Error(`process ${pid} has exited`);
  return { user: ticksToMs(Number(fields[11])), system: ticksToMs(Number(fields[12])) };
}

/** An SDK client with auto-driving elicitation: confirm, and a change ticket. */
export async function connect(url: URL, name = 'bench-http'): Promise<Client> {
  const client = new Client(
    { name, version: '1.0.0' },
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

/** Call `deploy_production` once (both legs) and check the final text. */
export async function deployOnce(client: Client, version: string, label: string): Promise<void> {
  const result = await client.callTool({ name: 'deploy_production', arguments: { version } });
  const text = ((result.content ?? []) as { type: string; text?: string }[]).map((b) => b.text ?? '').join('');
  if (text !== `Deployed ${version} to production (change ticket CHG-1234).`) {
    throw new Error(`${label}: unexpected result ${JSON.stringify(result)}`);
  }
}

/**
 * An SDK client that answers each round itself, as an application does: `inputRequired:
 * { autoFulfill: false }`, no elicitation handler; `tools/call` hands back the `input_required`
 * result ({@link deployAnswering}).
 */
export async function connectAnswering(url: URL, name = 'bench-concurrency-user'): Promise<Client> {
  const client = new Client(
    { name, version: '1.0.0' },
    {
      capabilities: { elicitation: { form: {} } },
      versionNegotiation: { mode: 'auto' },
      inputRequired: { autoFulfill: false },
    },
  );
  await client.connect(new StreamableHTTPClientTransport(url));
  return client;
}

/** The shape of a `tools/call` answer when the client handles rounds itself. */
interface Round {
  resultType?: string;
  inputRequests?: Record<string, { method?: string; params?: { requestedSchema?: { properties?: object } } }>;
  requestState?: string;
  content?: { type: string; text?: string }[];
}

/**
 * `deploy_production` once, answering the round itself: leg 1 returns `input_required` with
 * `confirm_deploy` and `change_ticket`; the client builds the answers from the requested schemas
 * (`{ confirm: true }`, `{ ticket: 'CHG-1234' }`) and calls again with `inputResponses` and the
 * `requestState` echoed; the final text is checked as {@link deployOnce} does.
 */
export async function deployAnswering(client: Client, version: string, label: string): Promise<void> {
  const params = { name: 'deploy_production', arguments: { version } };
  const asked = (await client.callTool(params, { allowInputRequired: true })) as Round;
  if (asked.resultType !== 'input_required' || !asked.inputRequests || !asked.requestState) {
    throw new Error(`${label}: expected input_required, got ${JSON.stringify(asked)}`);
  }
  const inputResponses: Record<string, ElicitResult> = {};
  for (const [key, request] of Object.entries(asked.inputRequests)) {
    const properties = Object.keys(request.params?.requestedSchema?.properties ?? {});
    inputResponses[key] = properties.includes('ticket')
      ? { action: 'accept', content: { ticket: 'CHG-1234' } }
      : { action: 'accept', content: { confirm: true } };
  }
  const done = (await client.callTool({ ...params, inputResponses, requestState: asked.requestState } as never, {
    allowInputRequired: true,
  })) as Round;
  const text = (done.content ?? []).map((b) => b.text ?? '').join('');
  if (text !== `Deployed ${version} to production (change ticket CHG-1234).`) {
    throw new Error(`${label}: unexpected result ${JSON.stringify(done)}`);
  }
}

/** One `tools/call` of the floor's `noop`, its text checked. */
export async function noopOnce(client: Client, label: string): Promise<void> {
  const result = await client.callTool({ name: 'noop', arguments: {} });
  const text = ((result.content ?? []) as { type: string; text?: string }[]).map((b) => b.text ?? '').join('');
  if (text !== 'ok') throw new Error(`${label}: unexpected result ${JSON.stringify(result)}`);
}

export const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
};
export const round2 = (n: number) => Math.round(n * 100) / 100;
