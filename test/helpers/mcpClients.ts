/**
 * Helpers for the adapter end-to-end tests: official-SDK clients with
 * elicitation, sampling and roots handlers that record what they were asked,
 * a recording (and optionally alternating) fetch for the HTTP transport,
 * manual rounds (`allowInputRequired`) for tampering and replay, and
 * `baton serve` child processes with bounded waits (the built CLI on plain
 * Node: `cliArgs`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  type CallToolResult,
  Client,
  type ClientCapabilities,
  type ElicitRequest,
  type ElicitResult,
  type InputRequiredResult,
  ProtocolError,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import { BUILT_CONDITION } from '../setup/builtPackages.js';

/** The repository root. */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The CLI entry point in the sources (run through tsx, as `pnpm -s baton` does). */
export const CLI = fileURLToPath(new URL('../../packages/adapters/src/cli/main.ts', import.meta.url));
/** The built CLI entry point (test/setup/builtPackages.ts builds it before the tests run). */
export const BUILT_CLI = fileURLToPath(new URL('../../packages/adapters/dist-test/cli/main.mjs', import.meta.url));
/** The flows module the adapter tests serve. */
export const FLOWS = fileURLToPath(new URL('../fixtures/adapter-flows', import.meta.url));

/** Every input kind. */
export const ALL_CAPABILITIES: ClientCapabilities = {
  elicitation: { form: {}, url: {} },
  sampling: {},
  roots: {},
};

/** What a client's handlers were asked, in order. */
export interface ClientLog {
  /** One entry per embedded request fulfilled: `elicit:<message>`, `sampling`, `roots`. */
  readonly asked: string[];
}

type ElicitParams = ElicitRequest['params'];

/** Default answers: confirm, a ticket, ok, accept URL sign-in. */
export function defaultElicit(params: ElicitParams): ElicitResult {
  if (params.mode === 'url') return { action: 'accept' };
  const properties = Object.keys(
    (params as { requestedSchema?: { properties?: object } }).requestedSchema?.properties ?? {},
  );
  if (properties.includes('confirm')) return { action: 'accept', content: { confirm: true } };
  if (properties.includes('ticket')) return { action: 'accept', content: { ticket: 'CHG-7' } };
  if (properties.includes('ok')) return { action: 'accept', content: { ok: true } };
  return { action: 'decline' };
}

export interface ClientOptions {
  readonly capabilities?: ClientCapabilities;
  readonly elicit?: (params: ElicitParams) => ElicitResult | Promise<ElicitResult>;
  /** `auto` (the 2026-07-28 wire when the server speaks it) or `legacy` (a 2025-era client). */
  readonly negotiation?: 'auto' | 'legacy';
}

/** An SDK client with handlers for every input kind it declares. */
export function newClient(options: ClientOptions = {}): { client: Client; log: ClientLog } {
  const capabilities = options.capabilities ?? ALL_CAPABILITIES;
  const log: ClientLog = { asked: [] };
  const client = new Client(
    { name: 'baton-e2e', version: '1.0.0' },
    {
      capabilities,
      ...(options.negotiation === 'legacy' ? {} : { versionNegotiation: { mode: 'auto' } }),
    },
  );
  if (capabilities.elicitation) {
    client.setRequestHandler('elicitation/create', async (request) => {
      log.asked.push(`elicit:${request.params.message}`);
      return (options.elicit ?? defaultElicit)(request.params);
    });
  }
  if (capabilities.sampling) {
    client.setRequestHandler('sampling/createMessage', async () => {
      log.asked.push('sampling');
      return { role: 'assistant', content: { type: 'text', text: 'Fixed bugs.' }, model: 'test-model' };
    });
  }
  if (capabilities.roots) {
    client.setRequestHandler('roots/list', async () => {
      log.asked.push('roots');
      return { roots: [{ uri: 'file:///repo', name: 'repo' }] };
    });
  }
  return { client, log };
}

/** One HTTP exchange as the client saw it. */
export interface WireLeg {
  readonly url: string;
  readonly request: { method?: string; id?: unknown; params?: Record<string, unknown> } | undefined;
  readonly status: number;
  readonly response: string;
}

/**
 * A fetch for `StreamableHTTPClientTransport` that records every exchange and sends
 * the i-th request to `targets[i % targets.length]` (one target: no alternation).
 */
export function recordingFetch(targets: readonly URL[], headers: Record<string, string> = {}) {
  const legs: WireLeg[] = [];
  let next = 0;
  const fetchFn = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const target = targets[next++ % targets.length]!;
    const merged = new Headers(init?.headers);
    for (const [name, value] of Object.entries(headers)) merged.set(name, value);
    const response = await fetch(target, { ...init, headers: merged });
    const body = typeof init?.body === 'string' ? JSON.parse(init.body) : undefined;
    const text = await response.clone().text();
    legs.push({ url: target.href, request: body, status: response.status, response: text });
    void input;
    return response;
  };
  return { fetch: fetchFn, legs };
}

/** Connect a client over Streamable HTTP, optionally with a bearer token and several servers. */
export async function connectHttp(
  targets: URL | readonly URL[],
  options: ClientOptions & { token?: string } = {},
): Promise<{ client: Client; log: ClientLog; legs: WireLeg[] }> {
  const list = Array.isArray(targets) ? targets : [targets as URL];
  const { client, log } = newClient(options);
  const recorder = recordingFetch(list, options.token ? { authorization: `Bearer ${options.token}` } : {});
  await client.connect(new StreamableHTTPClientTransport(list[0]!, { fetch: recorder.fetch }));
  return { client, log, legs: recorder.legs };
}

/** The concatenated text content of a tool result. */
export function textOf(result: { content?: unknown }): string {
  return ((result.content ?? []) as { type: string; text?: string }[])
    .map((block) => (block.type === 'text' ? block.text : ''))
    .join('');
}

type RoundParams = {
  name: string;
  arguments?: Record<string, unknown>;
  requestState?: string;
  inputResponses?: Record<string, unknown>;
};

/** One manual `tools/call` round: an `input_required` result comes back instead of being fulfilled. */
export async function toolRound(client: Client, params: RoundParams): Promise<CallToolResult | InputRequiredResult> {
  return (await client.callTool(
    params as Parameters<Client['callTool']>[0],
    {
      allowInputRequired: true,
    } as Parameters<Client['callTool']>[1],
  )) as CallToolResult | InputRequiredResult;
}

/** Assert an `input_required` result and return it. */
export function expectInputRequired(result: unknown): InputRequiredResult & { requestState: string } {
  const r = result as InputRequiredResult;
  if (r.resultType !== 'input_required' || typeof r.requestState !== 'string') {
    throw new Error(`expected input_required, got ${JSON.stringify(result)}`);
  }
  return r as InputRequiredResult & { requestState: string };
}

/** The JSON-RPC error a promise rejects with (fails when it resolves). */
export async function protocolError(promise: Promise<unknown>): Promise<{ code: number; message: string; data: any }> {
  try {
    const value = await promise;
    throw new Error(`expected a JSON-RPC error, got ${JSON.stringify(value)}`);
  } catch (error) {
    if (!(error instanceof ProtocolError)) throw error;
    return { code: error.code, message: error.message, data: error.data };
  }
}

/** A running `baton serve`. */
export interface ServeProcess {
  readonly url: URL;
  readonly child: ChildProcess;
  /** Everything written on stderr so far. */
  stderr(): string;
  /** SIGTERM, then wait for the exit (SIGKILL after 5 s); resolves with the exit code. */
  stop(): Promise<number | null>;
}

/**
 * The argv to run the CLI with this Node: the built CLI, with the export condition under which
 * the workspace packages resolve to their built copies (test/setup/builtPackages.ts); no tsx
 * until a TypeScript flows module needs it, as when installed from npm.
 */
export function cliArgs(args: readonly string[]): string[] {
  return [`--conditions=${BUILT_CONDITION}`, BUILT_CLI, ...args];
}

/** The argv to run the CLI from its sources through tsx, as `pnpm -s baton` runs it in the repository. */
export function sourceCliArgs(args: readonly string[]): string[] {
  return ['--import', 'tsx', CLI, ...args];
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** Start `baton serve ... --http` and wait (bounded) for the listening URL on stderr. */
export async function startServe(args: readonly string[], env: Record<string, string> = {}): Promise<ServeProcess> {
  const child = spawn(process.execPath, cliArgs(['serve', ...args]), {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const url = await new Promise<URL>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`baton serve did not start within 60 s:\n${stderr}`)), 60_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /serving .* at (http:\/\/\S+)/.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve(new URL(match[1]!));
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`baton serve exited with ${code}:\n${stderr}`));
    });
  });
  return {
    url,
    child,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
      const code = await exited(child);
      clearTimeout(killer);
      return code;
    },
  };
}

/**
 * Run the CLI to completion (bounded: 30 s), with `input` on stdin when given; resolves with its
 * exit code and output. `from`: the built CLI (`cliArgs`), or its sources through tsx (`sourceCliArgs`).
 */
export async function runCli(
  args: readonly string[],
  env: Record<string, string | undefined> = {},
  input?: string,
  from: 'build' | 'sources' = 'build',
): Promise<{ code: number | null; stderr: string; stdout: string }> {
  const child = spawn(process.execPath, from === 'build' ? cliArgs(args) : sourceCliArgs(args), {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  if (input !== undefined) child.stdin!.end(input);
  let stderr = '';
  let stdout = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const code = await new Promise<number | null>((resolve) => child.once('close', (exitCode) => resolve(exitCode)));
  clearTimeout(killer);
  return { code, stderr, stdout };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The JSON-RPC messages a stdio server wrote, one per stdout line; fails the test on the first line
 * that is not a JSON-RPC 2.0 message (a banner or a stray log line corrupts a strict client).
 */
export function jsonRpcLines(stdout: string): { jsonrpc: string; id?: number; result?: any }[] {
  const lines = stdout.endsWith('\n') ? stdout.slice(0, -1).split('\n') : stdout.split('\n');
  return lines.map((line) => {
    let message: { jsonrpc?: string } | undefined;
    try {
      message = JSON.parse(line);
    } catch {
      throw new Error(`a stdout line is not JSON: ${JSON.stringify(line)}\nstdout:\n${stdout}`);
    }
    if (message?.jsonrpc !== '2.0') throw new Error(`a stdout line is not JSON-RPC 2.0: ${line}`);
    return message as { jsonrpc: string };
  });
}
