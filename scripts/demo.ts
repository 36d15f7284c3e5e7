/**
 * The demo: Baton's main job on its embedded default. Starts two `baton serve
 * examples/approvals` instances over HTTP on loopback, sharing BATON_KEYS and
 * one SQLite ledger, with an `--auth-tokens` file naming two people: alice
 * (no roles) and bob (manager). With the official MCP SDK client it drives
 * `deploy_production` round by round as alice (what was asked, what was
 * answered, the result); then alice requests an `expense_approval` on one
 * instance (her call ends with the waiting result), bob finds it in
 * `baton_inbox` on the other instance and approves it through
 * `baton_decide`'s form, and alice's `baton_resume` gets the outcome; then a
 * used requestState is replayed and rejected; last, a deploy of a commit waits
 * for CI, `baton send-event ci.finished` (signed) moves it on, and alice's
 * `baton_resume` confirms it. Exits 0 when every step
 * behaved as expected, 1 otherwise.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
  structuredContent?: Record<string, any>;
  isError?: boolean;
};

/** How long one call of the requester waits for a decision before it completes with "waiting". */
const WAIT_IN_CALL_SECONDS = 2;

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

function startServer(
  port: number,
  ledgerPath: string,
  tokensFile: string,
  keys: string,
  ciSecret: string,
): Promise<ChildProcess> {
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
      '--auth-tokens',
      tokensFile,
      '--wait-in-call',
      String(WAIT_IN_CALL_SECONDS),
      '--event-secret',
      `ci.finished=${ciSecret}`,
    ],
    { cwd: ROOT, env: { ...process.env, BATON_KEYS: keys }, stdio: ['ignore', 'ignore', 'pipe'] },
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

/** `baton <args>` as a child process: its stdout, or an error with its stderr. */
function cli(args: string[]): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`baton ${args[0]}: ${stderr}`))));
  });
}

/** A client of one instance, as the person whose bearer token it sends. */
async function connect(port: number, token: string): Promise<Client> {
  const client = new Client({ name: 'baton-demo', version: '1.0.0' }, {
    capabilities: { elicitation: { form: {} } },
    versionNegotiation: { mode: 'auto' },
  } as never);
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  return client;
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
  if (result.resultType === 'input_required' && Object.keys(result.inputRequests ?? {}).length === 0) {
    console.log(
      `  ${bold('retry later')} (input_required, no requests; requestState ${result.requestState?.length} chars)`,
    );
  } else if (result.resultType === 'input_required') {
    console.log(`  ${bold('server asks')} (requestState ${result.requestState?.length} chars, sealed):`);
    for (const [key, request] of Object.entries(result.inputRequests ?? {}))
      console.log(`    ${describeRequest(key, request)}`);
  } else {
    console.log(`  ${bold(result.isError ? 'tool error' : 'result')}: ${text(result).replaceAll('\n', '\n    ')}`);
    if (result.structuredContent)
      console.log(`  ${dim('structuredContent')} ${JSON.stringify(result.structuredContent)}`);
  }
  return result;
}

function check(condition: boolean, what: string) {
  if (!condition) throw new Error(`demo expectation failed: ${what}`);
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'baton-demo-'));
  const ledger = join(dir, 'ledger.db');
  const tokens = { alice: randomBytes(18).toString('base64url'), bob: randomBytes(18).toString('base64url') };
  const tokensFile = join(dir, 'tokens.json');
  writeFileSync(
    tokensFile,
    JSON.stringify({ [tokens.alice]: 'alice', [tokens.bob]: { principal: 'bob', roles: ['manager'] } }),
    { mode: 0o600 },
  );
  const keys = randomBytes(32).toString('base64url'); // BATON_KEYS, shared by both instances
  const ciSecret = `whsec_${randomBytes(32).toString('base64')}`; // what CI signs ci.finished with
  const [portA, portB] = [await freePort(), await freePort()];
  console.log(bold('Baton demo: two instances, one SQLite ledger, two people'));
  console.log(dim('tokens file: alice (no roles), bob (role manager)'));
  const servers: ChildProcess[] = [];
  const clients: Client[] = [];
  try {
    for (const port of [portA, portB]) {
      console.log(
        dim(
          `starting: baton serve examples/approvals --http 127.0.0.1:${port} --ledger sqlite:${ledger} --auth-tokens tokens.json --wait-in-call ${WAIT_IN_CALL_SECONDS} --event-secret ci.finished=whsec_…`,
        ),
      );
      servers.push(await startServer(port, ledger, tokensFile, keys, ciSecret));
    }
    const alice = await connect(portA, tokens.alice);
    const bob = await connect(portB, tokens.bob);
    clients.push(alice, bob);
    const tools = await alice.listTools();
    console.log(dim(`tools: ${tools.tools.map((t) => t.name).join(', ')}`));

    console.log(`\n${bold('1. alice on instance A: deploy_production { version: "2.4.1" }')}`);
    const deploy = { name: 'deploy_production', arguments: { version: '2.4.1' } };
    const asked = await round(alice, deploy);
    check(Object.keys(asked.inputRequests ?? {}).join() === 'confirm_deploy,change_ticket', 'two parallel requests');
    const answers = {
      confirm_deploy: { action: 'accept', content: { confirm: true } },
      change_ticket: { action: 'accept', content: { ticket: 'CHG-2041' } },
    };
    const used = { ...deploy, requestState: asked.requestState!, inputResponses: answers };
    const deployed = await round(alice, used, answers);
    check(text(deployed).includes('Deployed 2.4.1') && text(deployed).includes('CHG-2041'), 'deployed with the ticket');

    console.log(`\n${bold('2. alice on instance A: expense_approval { amount: 800, purpose: "team offsite" }')}`);
    console.log(dim('  a manager, not the requester, decides: the round is held while the server polls the ledger'));
    console.log(
      dim(
        `  ("retry later" if the hold ends first); after ${WAIT_IN_CALL_SECONDS} s the call completes with the waiting result`,
      ),
    );
    const expense = { name: 'expense_approval', arguments: { amount: 800, purpose: 'team offsite' } };
    let waiting = await round(alice, expense);
    for (let i = 0; i < 5 && waiting.resultType === 'input_required'; i++) {
      check(Object.keys(waiting.inputRequests ?? {}).length === 0, 'alice is asked nothing: retry later');
      waiting = await round(alice, { ...expense, requestState: waiting.requestState! });
    }
    const status = waiting.structuredContent;
    check(status?.status === 'waiting' && typeof status.id === 'string', 'the call completes with the waiting result');
    const id = status!.id as string;
    check(text(waiting).includes(id), 'the waiting text names the request id');

    console.log(`\n${bold('3. alice may not decide her own request (four eyes)')}`);
    const ownInbox = await round(alice, { name: 'baton_inbox', arguments: {} });
    check((ownInbox.structuredContent?.decisions ?? []).length === 0, "alice's inbox is empty");
    const own = await round(alice, { name: 'baton_decide', arguments: { id } });
    check(own.isError === true, 'alice is refused');

    console.log(`\n${bold('4. bob on instance B: baton_inbox, then baton_decide')}`);
    const inbox = await round(bob, { name: 'baton_inbox', arguments: {} });
    check(
      (inbox.structuredContent?.decisions ?? []).some((d: { id: string }) => d.id === id),
      "the request is in bob's inbox on the other instance",
    );
    const decide = { name: 'baton_decide', arguments: { id } };
    const form = await round(bob, decide);
    check(Object.keys(form.inputRequests ?? {}).join() === 'decision', 'bob is asked the decision form');
    const verdict = { decision: { action: 'accept', content: { approve: true, comment: 'enjoy' } } };
    const recorded = await round(
      bob,
      { ...decide, requestState: form.requestState!, inputResponses: verdict },
      verdict,
    );
    check(text(recorded).startsWith('Recorded'), 'the decision is recorded');

    console.log(`\n${bold('5. alice on instance A: baton_resume { id }')}`);
    const resumed = await round(alice, { name: 'baton_resume', arguments: { id } });
    check(text(resumed) === 'Expense of 800 approved.', "alice's flow completes: approved");

    console.log(`\n${bold('6. replaying the deploy round that was already used')}`);
    console.log(
      dim(
        '  the same answers again (a lost response retried): the ledger returns the recorded outcome, nothing runs twice',
      ),
    );
    const retried = await round(alice, used, answers);
    check(text(retried) === text(deployed), 'retry returns the recorded outcome');
    console.log(dim('  other answers with the same requestState (a replay):'));
    const replayAnswers = { ...answers, change_ticket: { action: 'accept', content: { ticket: 'CHG-6666' } } };
    try {
      await round(alice, { ...used, inputResponses: replayAnswers }, replayAnswers);
      throw new Error('demo expectation failed: the replay was accepted');
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      console.log(
        `  ${bold('rejected')}: JSON-RPC ${error.code} "${error.message}" ${JSON.stringify(error.data ?? {})}`,
      );
      check(error.code === -32602, 'replay rejected with -32602');
    }

    console.log(`\n${bold('7. alice on instance A: deploy_production { version: "2.5.0", commit: "9f2c1e7" }')}`);
    console.log(dim('  the flow waits for CI to report on the commit (30 minutes at most) before it asks anything'));
    const gated = { name: 'deploy_production', arguments: { version: '2.5.0', commit: '9f2c1e7' } };
    let ci = await round(alice, gated);
    for (let i = 0; i < 5 && ci.resultType === 'input_required'; i++) {
      check(Object.keys(ci.inputRequests ?? {}).length === 0, 'alice is asked nothing while CI runs');
      ci = await round(alice, { ...gated, requestState: ci.requestState! });
    }
    const gatedId = ci.structuredContent?.id as string;
    check(ci.structuredContent?.status === 'waiting' && typeof gatedId === 'string', 'the deploy waits for CI');
    const sendEvent = ['send-event', 'ci.finished', '--data', '{"commit":"9f2c1e7","status":"success"}'];
    console.log(dim(`  CI, signed: baton ${sendEvent.join(' ')} --http http://127.0.0.1:${portB} --secret whsec_…`));
    const sent = await cli([...sendEvent, '--http', `http://127.0.0.1:${portB}`, '--secret', ciSecret]);
    console.log(`  ${bold('answered')}: ${sent.trim()}`);
    check((JSON.parse(sent) as { delivered: number }).delivered === 1, 'the event reached the waiting deploy');
    const resumeDeploy = { name: 'baton_resume', arguments: { id: gatedId } };
    const confirm = await round(alice, resumeDeploy);
    check(
      Object.keys(confirm.inputRequests ?? {}).join() === 'confirm_deploy,change_ticket',
      'green CI: the deploy asks for its confirmation',
    );
    const answersAfterCi = {
      confirm_deploy: { action: 'accept', content: { confirm: true } },
      change_ticket: { action: 'accept', content: { ticket: 'CHG-2042' } },
    };
    const shipped = await round(
      alice,
      { ...resumeDeploy, requestState: confirm.requestState!, inputResponses: answersAfterCi },
      answersAfterCi,
    );
    check(text(shipped).includes('Deployed 2.5.0'), 'deployed after green CI');
    console.log(`\n${bold('demo finished: every step behaved as expected')}`);
  } finally {
    await Promise.all(clients.map((client) => client.close().catch(() => {})));
    for (const server of servers) {
      const exited = new Promise((resolve) => server.once('exit', resolve));
      server.kill('SIGTERM');
      await exited;
    }
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
