/**
 * The demo: Baton's main job on its embedded default. Starts `baton serve
 * examples/approvals` over HTTP on loopback with a SQLite ledger, drives the
 * official MCP SDK client through `deploy_production` and `expense_approval`
 * round by round (what was asked, what was answered, the result), then
 * replays a used requestState to show it rejected. Exits 0 when every step
 * behaved as expected, 1 otherwise.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, ProtocolError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'packages/adapters/src/cli/main.ts');
const bold = (s: string) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
const dim = (s: string) => (process.stdout.isTTY ? `\x1b[2m${s}\x1b[0m` : s);

type Params = {
  name: string;
  arguments: Record<string, unknown>;
  requestState?: string;
  inputResponses?: Record<string, unknown>;
};
type Round = {
  resultType?: string;
  inputRequests?: Record<string, any>;
  requestState?: string;
  content?: { type: string; text?: string }[];
  isError?: boolean;
};

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function startServer(port: number, ledgerPath: string): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      CLI,
      'serve',
      'examples/approvals',
      '--http',
      `127.0.0.1:${port}`,
      '--ledger',
      `sqlite:${ledgerPath}`,
    ],
    {
      cwd: ROOT,
      env: { ...process.env, BATON_KEYS: randomBytes(32).toString('base64url') },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  return new Promise((resolve, reject) => {
    let stderr = '';
    const timer = setTimeout(() => reject(new Error(`the server did not start in 30 s:\n${stderr}`)), 30_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (/serving .* at http/.test(stderr)) {
        clearTimeout(timer);
        resolve(child);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited with ${code}:\n${stderr}`));
    });
  });
}

const text = (r: Round) => (r.content ?? []).map((c) => c.text ?? '').join('');

function describeRequest(key: string, request: any): string {
  if (request.method === 'elicitation/create') {
    const fields = Object.keys(request.params.requestedSchema?.properties ?? {}).join(', ');
    return `${key}: form "${request.params.message}" (fields: ${fields})`;
  }
  return `${key}: ${request.method}`;
}

async function round(client: Client, params: Params, answers?: Record<string, unknown>): Promise<Round> {
  if (answers) {
    for (const [key, value] of Object.entries(answers))
      console.log(`    ${dim('answer')}  ${key} = ${JSON.stringify(value)}`);
  }
  const result = (await client.callTool(params as never, { allowInputRequired: true } as never)) as Round;
  if (result.resultType === 'input_required') {
    console.log(`  ${bold('server asks')} (requestState ${result.requestState?.length} chars, sealed):`);
    for (const [key, request] of Object.entries(result.inputRequests ?? {}))
      console.log(`    ${describeRequest(key, request)}`);
  } else {
    console.log(`  ${bold('result')}: ${text(result)}`);
  }
  return result;
}

function check(condition: boolean, what: string) {
  if (!condition) throw new Error(`demo expectation failed: ${what}`);
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'baton-demo-'));
  const port = await freePort();
  console.log(bold('Baton demo'));
  console.log(
    dim(`starting: baton serve examples/approvals --http 127.0.0.1:${port} --ledger sqlite:${join(dir, 'ledger.db')}`),
  );
  const server = await startServer(port, join(dir, 'ledger.db'));
  const client = new Client({ name: 'baton-demo', version: '1.0.0' }, {
    capabilities: { elicitation: { form: {} } },
    versionNegotiation: { mode: 'auto' },
  } as never);
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
    const tools = await client.listTools();
    console.log(dim(`tools: ${tools.tools.map((t) => t.name).join(', ')}`));

    console.log(`\n${bold('1. deploy_production { version: "2.4.1" }')}`);
    const deploy = { name: 'deploy_production', arguments: { version: '2.4.1' } };
    const asked = await round(client, deploy);
    check(Object.keys(asked.inputRequests ?? {}).join() === 'confirm_deploy,change_ticket', 'two parallel requests');
    const answers = {
      confirm_deploy: { action: 'accept', content: { confirm: true } },
      change_ticket: { action: 'accept', content: { ticket: 'CHG-2041' } },
    };
    const used = { ...deploy, requestState: asked.requestState!, inputResponses: answers };
    const deployed = await round(client, used, answers);
    check(text(deployed).includes('Deployed 2.4.1') && text(deployed).includes('CHG-2041'), 'deployed with the ticket');

    console.log(`\n${bold('2. expense_approval { amount: 2500, purpose: "team offsite" }')}`);
    const expense = { name: 'expense_approval', arguments: { amount: 2500, purpose: 'team offsite' } };
    console.log(dim('  a manager, not the requester, decides: the round waits for them (held, then "retry later")'));
    const waiting = await round(client, expense);
    check(
      waiting.resultType === 'input_required' && Object.keys(waiting.inputRequests ?? {}).length === 0,
      'waits for a manager: input_required with no requests',
    );

    console.log(`\n${bold('3. replaying the deploy round that was already used')}`);
    console.log(
      dim(
        '  the same answers again (a lost response retried): the ledger returns the recorded outcome, nothing runs twice',
      ),
    );
    const retried = await round(client, used, answers);
    check(text(retried) === text(deployed), 'retry returns the recorded outcome');
    console.log(dim('  other answers with the same requestState (a replay):'));
    const replayAnswers = { ...answers, change_ticket: { action: 'accept', content: { ticket: 'CHG-6666' } } };
    try {
      await round(client, { ...used, inputResponses: replayAnswers }, replayAnswers);
      throw new Error('demo expectation failed: the replay was accepted');
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      console.log(
        `  ${bold('rejected')}: JSON-RPC ${error.code} "${error.message}" ${JSON.stringify(error.data ?? {})}`,
      );
      check(error.code === -32602, 'replay rejected with -32602');
    }
    console.log(`\n${bold('demo finished: every step behaved as expected')}`);
  } finally {
    await client.close().catch(() => {});
    server.kill('SIGTERM');
    await new Promise((resolve) => server.once('exit', resolve));
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(`demo failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
