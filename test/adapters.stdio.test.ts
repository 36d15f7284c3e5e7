/**
 * `baton serve --stdio` spawned by the official SDK client's
 * `StdioClientTransport`: a 2026-07-28 client drives rounds itself (and gets
 * -32602 for a tampered state); a 2025-era client is served through the
 * SDK's legacy shim, which turns each round's requests into real
 * server-to-client requests. And the stdio command the READMEs document,
 * read from the READMEs and run through a shell as a user would: every line
 * it writes on stdout is JSON.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateKey } from '@baton/engine';
import type { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type ClientOptions,
  cliArgs,
  connectHttp,
  expectInputRequired,
  FLOWS,
  jsonRpcLines,
  newClient,
  protocolError,
  ROOT,
  startServe,
  textOf,
  toolRound,
} from './helpers/mcpClients.js';

const env = { ...(process.env as Record<string, string>), BATON_KEYS: generateKey() };
const clients: Client[] = [];

afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});

async function connectStdio(options: ClientOptions = {}) {
  const { client, log } = newClient(options);
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: cliArgs(['serve', FLOWS, '--stdio']),
    cwd: ROOT,
    env,
    stderr: 'ignore',
  });
  clients.push(client);
  await client.connect(transport, { timeout: 30_000 });
  return { client, log };
}

describe('a 2026-07-28 client', () => {
  it('negotiates the modern wire and runs a flow with parallel requests', async () => {
    const { client, log } = await connectStdio();
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    const result = await client.callTool({ name: 'deploy_production', arguments: { version: '9.0.0' } });
    expect(textOf(result)).toBe('Deployed 9.0.0 (ticket CHG-7)');
    expect(log.asked).toHaveLength(2);
    const notes = await client.callTool({ name: 'draft_notes', arguments: {} });
    expect(notes.structuredContent).toEqual({ roots: ['file:///repo'], notes: 'Fixed bugs.' });
  });

  it('gets -32602 for a tampered state', async () => {
    const { client } = await connectStdio();
    const call = { name: 'deploy_production', arguments: { version: '9.1.0' } };
    const first = expectInputRequired(await toolRound(client, call));
    const error = await protocolError(
      toolRound(client, { ...call, requestState: `${first.requestState}A`, inputResponses: {} }),
    );
    expect(error).toMatchObject({
      code: -32602,
      message: 'Invalid or expired requestState',
      data: { reason: expect.any(String) },
    });
  });
});

describe('the local user as principal', () => {
  const call = { name: 'deploy_production', arguments: { version: '9.3.0' } };
  const answers = {
    confirm_deploy: { action: 'accept', content: { confirm: true } },
    change_ticket: { action: 'accept', content: { ticket: 'CHG-3' } },
  };

  it('lets another stdio server of the same user finish the flow, and no HTTP caller', async () => {
    const { client: first } = await connectStdio();
    const started = expectInputRequired(await toolRound(first, call));

    const http = await startServe([FLOWS, '--http', '127.0.0.1:0'], { BATON_KEYS: env.BATON_KEYS! });
    try {
      const { client: anonymous } = await connectHttp(http.url);
      clients.push(anonymous);
      const error = await protocolError(
        toolRound(anonymous, { ...call, requestState: started.requestState, inputResponses: answers }),
      );
      expect(error).toMatchObject({ code: -32602, data: { reason: 'bad_integrity' } });
    } finally {
      await http.stop();
    }

    const { client: second } = await connectStdio();
    const done = await toolRound(second, { ...call, requestState: started.requestState, inputResponses: answers });
    expect(textOf(done as { content: unknown })).toBe('Deployed 9.3.0 (ticket CHG-3)');
  });
});

describe('a 2025-era client', () => {
  it('is served through the legacy shim: rounds become server-to-client requests', async () => {
    const { client, log } = await connectStdio({ negotiation: 'legacy' });
    expect(client.getNegotiatedProtocolVersion()).not.toBe('2026-07-28');
    const result = await client.callTool({ name: 'deploy_production', arguments: { version: '9.2.0' } });
    expect(textOf(result)).toBe('Deployed 9.2.0 (ticket CHG-7)');
    expect(log.asked).toEqual([
      'elicit:Deploy 9.2.0 to production? Plan: rolling update to 9.2.0 on 3 nodes',
      'elicit:Change ticket for this deployment?',
    ]);
    const notes = await client.callTool({ name: 'draft_notes', arguments: {} });
    expect(notes.structuredContent).toEqual({ roots: ['file:///repo'], notes: 'Fixed bugs.' });
    expect(log.asked.slice(2)).toEqual(['roots', 'sampling']);
  });

  it('is never sent a kind of request it did not declare', async () => {
    const { client, log } = await connectStdio({ negotiation: 'legacy', capabilities: { elicitation: {} } });
    const result = await client.callTool({ name: 'link_account', arguments: {} });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain('url input');
    expect(log.asked).toEqual([]);
  });
});

/** The command line that starts the example server on stdio, as `source` documents it. */
function documentedStdioCommand(source: 'README.md' | 'packages/adapters/README.md'): string {
  const text = readFileSync(join(ROOT, source), 'utf8');
  if (source === 'README.md') {
    // "After the install, `<runner> baton <command>` runs the CLI from the repository root".
    const runner = /`([^`]*?)\s*baton <command>` runs the CLI/.exec(text)?.[1];
    if (!runner) throw new Error('README.md no longer says how to run the CLI ("`... baton <command>` runs the CLI")');
    return `${runner} baton serve examples/approvals --stdio`;
  }
  const example = /`([^`]*baton serve examples\/approvals --stdio)`/.exec(text)?.[1];
  if (!example) throw new Error(`${source} no longer shows a --stdio command for examples/approvals`);
  return example;
}

/**
 * Run `command` through a shell at the repository root, send `initialize`, `initialized` and
 * `tools/list` as JSON lines, and collect stdout until the `tools/list` answer (bounded: 60 s).
 */
async function exchange(command: string): Promise<string> {
  const child = spawn('sh', ['-c', command], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'ignore'] });
  let stdout = '';
  const answered = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no tools/list answer within 60 s; stdout:\n${stdout}`)), 60_000);
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (/"id":2[,}]/.test(stdout)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`"${command}" exited with ${code} before answering; stdout:\n${stdout}`));
    });
  });
  const send = (message: object) => child.stdin.write(`${JSON.stringify(message)}\n`);
  send({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'stdout-check', version: '1.0.0' } },
  });
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
  try {
    await answered;
  } finally {
    child.stdin.end();
    const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    if (child.exitCode === null && child.signalCode === null) await new Promise((r) => child.once('exit', r));
    clearTimeout(killer);
  }
  return stdout;
}

describe('the documented stdio command', () => {
  it.each(['README.md', 'packages/adapters/README.md'] as const)(
    'as %s has it, writes only JSON on stdout',
    async (source) => {
      const stdout = await exchange(documentedStdioCommand(source));
      const list = jsonRpcLines(stdout).find((m) => m.id === 2);
      expect(list?.result.tools.map((t: { name: string }) => t.name)).toContain('deploy_production');
    },
  );
});
