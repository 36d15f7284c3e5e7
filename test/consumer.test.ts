/**
 * The packages as a user gets them from npm. `pnpm pack` builds and packs
 * `@baton/engine`, `@baton/store` and `@baton/adapters` (pnpm rewrites the
 * `workspace:*` versions and applies `publishConfig`); plain `npm install`
 * puts the tarballs into a temporary project outside the workspace, with a
 * PATH on which neither pnpm nor tsx exists. There, plain `node` imports every
 * entry point from a `.mjs`; `npx baton --help` runs; `npx baton serve` serves
 * a `.mjs` and a `.ts` flows module with a SQLite ledger and the official
 * client completes a two-round flow against each; the stdio server writes
 * nothing but JSON-RPC on stdout; `npx baton inspect` serves its page (static
 * files shipped in `dist/`) and the runs the audit recorded; `tsc` type-checks a consumer file against
 * the published `.d.mts` (skipLibCheck off). A second project installs
 * `@baton/engine` alone (no native build), then adds `@baton/store` without a
 * driver: its root imports, and a `sqlite:` ledger fails with one line naming
 * the package to install. `npx baton init` writes a starter project beside
 * it: with its `@baton/*` dependencies pointed at the tarballs, `npm install`,
 * `npm test` (the starter's test-kit tests), `npm run typecheck`, then
 * `npm run serve` serves its flow, which the official client completes over
 * two rounds and `npm run call` answers at a piped terminal. A CommonJS
 * project made by `npm init -y` (`"type": "commonjs"`) installs the tarballs
 * and serves a `flows.ts` and a `flows.js` (plain `require`) whose flow runs a
 * durable step, with a ledger: two instances of the flow get different
 * idempotency keys, and a retried round gets the recorded result without
 * running the step again. Install durations are logged on stderr.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CallToolResult, Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHttp, expectInputRequired, textOf, toolRound } from './helpers/mcpClients.js';
import { compiledHere, MIRROR_ENV, type PrebuildMirror, startPrebuildMirror } from './helpers/prebuildMirror.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The workspace's better-sqlite3 (the store's dependency), built by `pnpm install`. */
const WORKSPACE_SQLITE = join(ROOT, 'packages', 'store', 'node_modules', 'better-sqlite3');
const PACKAGES = ['engine', 'store', 'adapters'] as const;
/** The bound on one `npm install` of the three tarballs (better-sqlite3 builds from source: about 2 minutes). */
const INSTALL_TIMEOUT_MS = 8 * 60_000;
/** Commands a user of these packages has no business finding on PATH here. */
const HIDDEN_COMMANDS = new Set(['pnpm', 'pnpx', 'tsx', 'corepack', 'yarn', 'yarnpkg']);

interface Ran {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

function log(line: string): void {
  process.stderr.write(`[consumer] ${line}\n`);
}

/** Run a command to completion within `timeoutMs` (then SIGKILL its process group and fail); `input` goes to stdin. */
function run(
  command: string,
  args: readonly string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
  input?: string,
) {
  const started = performance.now();
  const child = spawn(command, args, {
    cwd,
    env,
    stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    detached: true,
  });
  child.stdin?.end(input);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise<Ran>((resolve, reject) => {
    const timer = setTimeout(() => {
      killGroup(child, 'SIGKILL');
      reject(new Error(`${command} ${args.join(' ')} took longer than ${timeoutMs / 1000} s\n${stderr.slice(-2000)}`));
    }, timeoutMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: performance.now() - started });
    });
  });
}

/** Run and expect exit code 0. */
async function ok(
  command: string,
  args: readonly string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  timeoutMs = 60_000,
  input?: string,
) {
  const ran = await run(command, args, cwd, env, timeoutMs, input);
  if (ran.code !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} exited with ${ran.code}\n${ran.stdout.slice(-2000)}\n${ran.stderr.slice(-4000)}`,
    );
  }
  return ran;
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

/**
 * A folder of links to every command on this PATH except pnpm, tsx and their kin,
 * and an environment without pnpm's npm_* variables, NODE_OPTIONS or vitest's.
 */
function userEnvironment(base: string): NodeJS.ProcessEnv {
  const bin = join(base, 'bin');
  mkdirSync(bin);
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '' || dir.includes('node_modules') || !existsSync(dir)) continue;
    for (const name of readdirSync(dir)) {
      if (HIDDEN_COMMANDS.has(name) || existsSync(join(bin, name))) continue;
      symlinkSync(join(dir, name), join(bin, name));
    }
  }
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (/^(npm_|pnpm_|PNPM|VITEST|TSX)|^NODE_OPTIONS$|^INIT_CWD$/i.test(name)) continue;
    env[name] = value;
  }
  env.PATH = bin;
  env.BATON_KEYS = randomBytes(32).toString('base64url');
  return env;
}

function writeProject(dir: string, files: Record<string, string>): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'package.json'),
    `${JSON.stringify({ name: 'consumer', private: true, type: 'module' }, null, 2)}\n`,
  );
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
}

/** A two-round flow in plain JavaScript. */
const FLOWS_MJS = `import { ask, defineFlow, defineInputs, form } from '@baton/engine';
import { setup } from 'xstate';
import { z } from 'zod';

const inputs = defineInputs({
  confirm: form({ message: ({ context }) => \`Deploy \${context.version}?\`, schema: z.object({ confirm: z.boolean() }) }),
});

const machine = setup({}).createMachine({
  context: ({ input }) => input,
  initial: 'asking',
  states: {
    asking: {
      meta: ask(inputs, 'confirm'),
      on: {
        'input.confirm': [
          { guard: ({ event }) => event.action === 'accept' && event.content.confirm, target: 'done' },
          { target: 'cancelled' },
        ],
      },
    },
    done: { type: 'final', output: ({ context }) => \`Deployed \${context.version} (mjs)\` },
    cancelled: { type: 'final', output: () => 'Cancelled' },
  },
});

export const deploy = defineFlow({
  name: 'deploy',
  description: 'Deploy after confirmation',
  args: z.object({ version: z.string().min(1) }),
  inputs,
  machine,
});
`;

/** The same flow in TypeScript, importing a sibling \`.ts\` module by its \`.js\` name. */
const FLOWS_TS = `import { ask, defineFlow, defineInputs, form, type InputEvents } from '@baton/engine';
import { setup } from 'xstate';
import { z } from 'zod';
import { question } from './messages.js';

const inputs = defineInputs({
  confirm: form({
    message: ({ context }: { context: { version: string } }) => question(context.version),
    schema: z.object({ confirm: z.boolean() }),
  }),
});

const machine = setup({
  types: {
    context: {} as { version: string },
    input: {} as { version: string },
    events: {} as InputEvents<typeof inputs>,
  },
}).createMachine({
  context: ({ input }) => input,
  initial: 'asking',
  states: {
    asking: {
      meta: ask(inputs, 'confirm'),
      on: {
        'input.confirm': [
          { guard: ({ event }) => event.action === 'accept' && event.content.confirm, target: 'done' },
          { target: 'cancelled' },
        ],
      },
    },
    done: { type: 'final', output: ({ context }) => \`Deployed \${context.version} (ts)\` },
    cancelled: { type: 'final', output: () => 'Cancelled' },
  },
});

export const deploy = defineFlow({
  name: 'deploy',
  description: 'Deploy after confirmation',
  args: z.object({ version: z.string().min(1) }),
  inputs,
  machine,
});
`;

const MESSAGES_TS = `export const question = (version: string): string => \`Deploy \${version}?\`;\n`;

const ENTRY_POINTS = [
  '@baton/engine',
  '@baton/engine/testing',
  '@baton/store',
  '@baton/store/memory',
  '@baton/store/better-sqlite3',
  '@baton/store/node-postgres',
  '@baton/adapters',
];

/** Imports each entry point named on the command line; prints { entry: [export names] }. */
const IMPORTS_MJS = `const loaded = {};
for (const entry of process.argv.slice(2)) loaded[entry] = Object.keys(await import(entry)).sort();
console.log(JSON.stringify(loaded));
`;

/** What a TypeScript user writes against the published declarations. */
const CHECK_TS = `import { createRunner, createRequestStateCodec, generateKey, type Flow, type Ledger } from '@baton/engine';
import { createFlowTester } from '@baton/engine/testing';
import { openAuditLog, openLedger, type StoreAuditLog } from '@baton/store';
import { createMemoryLedger } from '@baton/store/memory';
import { createSqliteLedger } from '@baton/store/better-sqlite3';
import { createPostgresLedger, type PostgresLedgerOptions } from '@baton/store/node-postgres';
import { createFlowServerFactory, loadFlowsModule, serveHttp } from '@baton/adapters';
import { deploy } from './flows.js';

const flows: Flow[] = [deploy];
const ledger: Ledger = await openLedger('memory:');
const audit: StoreAuditLog = await openAuditLog('memory:');
const memory: Ledger = createMemoryLedger();
const runner = createRunner({ flows, codec: createRequestStateCodec({ keys: [generateKey()] }), ledger });
const options: PostgresLedgerOptions = { connectionString: 'postgres://localhost/baton' };
export { audit, createFlowServerFactory, createFlowTester, createPostgresLedger, createSqliteLedger, loadFlowsModule, memory, options, runner, serveHttp };
`;

const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    strict: true,
    noEmit: true,
    skipLibCheck: false,
    types: ['node'],
  },
  include: ['check.ts', 'flows.ts', 'messages.ts'],
};

/** Start `npx baton serve|inspect ...`; resolves once it prints its URL (or the stdio line). */
function startBaton(cwd: string, env: NodeJS.ProcessEnv, args: readonly string[]) {
  return startServing('npx', ['baton', ...args], cwd, env);
}

/** Start a command that runs `baton serve|inspect`; resolves once it prints its URL (or the stdio line). */
async function startServing(command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv) {
  const label = `${command} ${args.join(' ')}`;
  const child = spawn(command, args, {
    cwd,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  let stderr = '';
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${label} did not start within 60 s:\n${stderr}`)), 60_000);
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /(?:serving|inspecting) .* (?:at (http:\/\/\S+)|on stdio)/.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve(match[1] ?? 'stdio');
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${label} exited with ${code}:\n${stderr}`));
    });
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    killGroup(child, 'SIGTERM');
    const killer = setTimeout(() => killGroup(child, 'SIGKILL'), 5000);
    await exited;
    clearTimeout(killer);
  };
  return { child, url, stop, stdout: () => stdout, stderr: () => stderr };
}

/** Drive `deploy` with the official client over HTTP; returns its text, what was asked and the tools/call count. */
async function deployOverHttp(url: string) {
  const client = new Client(
    { name: 'consumer-test', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: 'auto' } },
  );
  const asked: string[] = [];
  client.setRequestHandler('elicitation/create', async (request) => {
    asked.push(request.params.message);
    return { action: 'accept', content: { confirm: true } };
  });
  let toolCalls = 0;
  const countingFetch = async (input: string | URL | Request, init?: RequestInit) => {
    if (typeof init?.body === 'string' && (JSON.parse(init.body) as { method?: string }).method === 'tools/call') {
      toolCalls++;
    }
    return fetch(input, init);
  };
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: countingFetch }));
  try {
    const result = (await client.callTool({ name: 'deploy', arguments: { version: '1.2.3' } })) as CallToolResult;
    const text = result.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
    return { text, asked, toolCalls, isError: result.isError === true };
  } finally {
    await client.close();
  }
}

/** Drive the starter's `publish_release` with the official client over HTTP. */
async function publishOverHttp(url: string) {
  const client = new Client(
    { name: 'consumer-test', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: 'auto' } },
  );
  const asked: string[] = [];
  client.setRequestHandler('elicitation/create', async (request) => {
    asked.push(request.params.message);
    const fields = Object.keys(
      (request.params as { requestedSchema?: { properties?: object } }).requestedSchema?.properties ?? {},
    );
    const content: Record<string, string | boolean> = fields.includes('confirm')
      ? { confirm: true }
      : { note: 'From the consumer test.' };
    return { action: 'accept', content };
  });
  let toolCalls = 0;
  const countingFetch = async (input: string | URL | Request, init?: RequestInit) => {
    if (typeof init?.body === 'string' && (JSON.parse(init.body) as { method?: string }).method === 'tools/call') {
      toolCalls++;
    }
    return fetch(input, init);
  };
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: countingFetch }));
  try {
    const result = (await client.callTool({
      name: 'publish_release',
      arguments: { version: '1.2.3' },
    })) as CallToolResult;
    const text = result.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
    return { text, asked, toolCalls, isError: result.isError === true };
  } finally {
    await client.close();
  }
}

describe('the published packages, installed with npm into a project outside the workspace', () => {
  let base: string;
  let env: NodeJS.ProcessEnv;
  let app: string;
  let mirror: PrebuildMirror | undefined;
  const tarballs: Record<(typeof PACKAGES)[number], string> = { engine: '', store: '', adapters: '' };

  beforeAll(
    async () => {
      base = mkdtempSync(join(tmpdir(), 'baton-consumer-'));
      env = userEnvironment(base);
      // better-sqlite3 as a prebuild: the workspace's own build (pnpm built it from source at
      // install) when the registry's 12.x is that version, else the app's, built from source.
      mirror = await startPrebuildMirror();
      env[MIRROR_ENV] = mirror.url;
      log(`better-sqlite3 prebuild of the workspace published at ${await mirror.publish(WORKSPACE_SQLITE)}`);
      const packs = join(base, 'packs');
      mkdirSync(packs);
      const packStarted = performance.now();
      for (const name of PACKAGES) {
        await ok('pnpm', ['pack', '--pack-destination', packs], join(ROOT, 'packages', name), process.env, 120_000);
      }
      for (const file of readdirSync(packs)) {
        const name = PACKAGES.find((candidate) => file.startsWith(`baton-${candidate}-`));
        if (name) tarballs[name] = join(packs, file);
      }
      log(
        `pnpm pack (with the tsdown build) of the three packages: ${((performance.now() - packStarted) / 1000).toFixed(1)} s`,
      );
      expect(Object.values(tarballs).every((path) => path !== '')).toBe(true);

      app = join(base, 'app');
      writeProject(app, {
        'flows.mjs': FLOWS_MJS,
        'flows.ts': FLOWS_TS,
        'messages.ts': MESSAGES_TS,
        'imports.mjs': IMPORTS_MJS,
        'check.ts': CHECK_TS,
        'tsconfig.json': `${JSON.stringify(TSCONFIG, null, 2)}\n`,
      });
      const installed = await ok(
        'npm',
        [
          'install',
          '--no-audit',
          '--no-fund',
          tarballs.engine,
          tarballs.store,
          tarballs.adapters,
          'better-sqlite3@12',
          'pg@8',
          'xstate@5',
          'zod@4',
          '@types/node@20',
          '@types/pg@8',
        ],
        app,
        env,
        INSTALL_TIMEOUT_MS,
      );
      log(
        `npm install of the three tarballs with better-sqlite3 and pg: ${(installed.ms / 1000).toFixed(1)} s (better-sqlite3 ${compiledHere(join(app, 'node_modules', 'better-sqlite3')) ? 'built from source' : 'from the prebuild mirror'})`,
      );
      if (compiledHere(join(app, 'node_modules', 'better-sqlite3'))) {
        log(
          `better-sqlite3 prebuild published at ${await mirror.publish(join(app, 'node_modules', 'better-sqlite3'))}`,
        );
      }
    },
    INSTALL_TIMEOUT_MS + 5 * 60_000,
  );

  afterAll(async () => {
    await mirror?.close();
    if (base) rmSync(base, { recursive: true, force: true });
  });

  it('runs where neither pnpm nor tsx is on PATH', async () => {
    for (const command of ['pnpm', 'tsx']) {
      const found = await run('sh', ['-c', `command -v ${command}`], app, env, 10_000);
      expect(found.code, `${command} is visible at ${found.stdout}`).not.toBe(0);
    }
    expect(existsSync(join(app, 'node_modules/@baton/adapters/dist/cli/main.mjs'))).toBe(true);
    expect(existsSync(join(app, 'node_modules/@baton/adapters/src'))).toBe(false);
  });

  it('imports every entry point from a plain .mjs with plain node', async () => {
    const ran = await ok('node', ['imports.mjs', ...ENTRY_POINTS], app, env);
    const loaded = JSON.parse(ran.stdout) as Record<string, string[]>;
    expect(Object.keys(loaded)).toEqual(ENTRY_POINTS);
    expect(loaded['@baton/engine']).toEqual(expect.arrayContaining(['createRunner', 'defineFlow', 'form']));
    expect(loaded['@baton/engine/testing']).toContain('createFlowTester');
    expect(loaded['@baton/store']).toEqual(expect.arrayContaining(['openLedger', 'openAuditLog']));
    expect(loaded['@baton/store']).not.toContain('createSqliteLedger');
    expect(loaded['@baton/store/memory']).toContain('createMemoryLedger');
    expect(loaded['@baton/store/better-sqlite3']).toEqual(['createSqliteAuditLog', 'createSqliteLedger']);
    expect(loaded['@baton/store/node-postgres']).toEqual(['createPostgresAuditLog', 'createPostgresLedger']);
    expect(loaded['@baton/adapters']).toEqual(expect.arrayContaining(['createFlowServerFactory', 'serveHttp']));
  });

  it('runs npx baton --help', async () => {
    const ran = await ok('npx', ['baton', '--help'], app, env);
    expect(ran.stdout + ran.stderr).toContain('usage: npx baton <command>');
  });

  it.each([
    ['flows.mjs', 'mjs'],
    ['flows.ts', 'ts'],
  ])(
    'npx baton serve %s with a SQLite ledger: the official client completes a two-round flow',
    async (module, kind) => {
      const ledger = `ledger-${kind}.db`;
      const server = await startBaton(app, env, [
        'serve',
        module,
        '--http',
        '127.0.0.1:0',
        '--ledger',
        `sqlite:${ledger}`,
        '--audit',
      ]);
      try {
        const outcome = await deployOverHttp(server.url);
        expect(outcome).toEqual({
          text: `Deployed 1.2.3 (${kind})`,
          asked: ['Deploy 1.2.3?'],
          toolCalls: 2,
          isError: false,
        });
        expect(existsSync(join(app, ledger))).toBe(true);
        expect(server.stderr()).not.toMatch(/error/i);
      } finally {
        await server.stop();
      }
    },
  );

  it.each(['flows.mjs', 'flows.ts'])(
    'npx baton serve %s --stdio writes nothing but JSON-RPC on stdout',
    async (module) => {
      const server = await startBaton(app, env, ['serve', module, '--stdio']);
      try {
        const send = (message: object) => server.child.stdin!.write(`${JSON.stringify(message)}\n`);
        const answered = (id: number) =>
          new Promise<void>((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error(`no answer to ${id}: ${server.stdout()}`)), 20_000);
            const check = () => {
              if (
                server
                  .stdout()
                  .split('\n')
                  .some((line) => line.includes(`"id":${id}`))
              ) {
                clearTimeout(timer);
                server.child.stdout!.off('data', check);
                resolve();
              }
            };
            server.child.stdout!.on('data', check);
            check();
          });
        send({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: '2025-11-25',
            capabilities: {},
            clientInfo: { name: 'consumer-test', version: '1.0.0' },
          },
        });
        await answered(1);
        send({ jsonrpc: '2.0', method: 'notifications/initialized' });
        send({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} });
        await answered(2);
        const lines = server
          .stdout()
          .split('\n')
          .filter((line) => line !== '');
        for (const line of lines) expect(JSON.parse(line)).toMatchObject({ jsonrpc: '2.0' });
        expect(lines.join('\n')).toContain('"name":"deploy"');
      } finally {
        await server.stop();
      }
    },
  );

  it('npx baton inspect serves its page from the installed package, with the recorded runs', async () => {
    const inspect = await startBaton(app, env, ['inspect', 'flows.ts', '--audit', 'sqlite:ledger-ts.db']);
    try {
      for (const [path, type] of [
        ['/', 'text/html'],
        ['/inspect.js', 'text/javascript'],
        ['/inspect.css', 'text/css'],
      ] as const) {
        const response = await fetch(new URL(path, inspect.url));
        expect(response.status, path).toBe(200);
        expect(response.headers.get('content-type'), path).toContain(type);
        expect((await response.text()).length, path).toBeGreaterThan(100);
      }
      const recorded = (await (await fetch(new URL('/api/instances', inspect.url))).json()) as {
        instances: { flow: string }[];
      };
      expect(recorded.instances.map((instance) => instance.flow)).toContain('deploy');
      // The graph comes laid out by elkjs, loaded from the installed package on plain Node.
      const graph = (await (await fetch(new URL('/api/flows/deploy/graph', inspect.url))).json()) as {
        nodes: { id: string }[];
        layout: { nodes: Record<string, unknown> };
      };
      expect(Object.keys(graph.layout.nodes).sort()).toEqual(graph.nodes.map((node) => node.id).sort());
    } finally {
      await inspect.stop();
    }
  });

  it('type-checks a consumer against the published .d.mts files (skipLibCheck off)', async () => {
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
    const ran = await run('node', [tsc, '-p', 'tsconfig.json'], app, env, 120_000);
    expect(`${ran.stdout}${ran.stderr}`.trim()).toBe('');
    expect(ran.code).toBe(0);
  });

  it('installs @baton/engine alone with nothing native; adding @baton/store without a driver names the one to install', async () => {
    const alone = join(base, 'engine-alone');
    writeProject(alone, { 'imports.mjs': IMPORTS_MJS, 'open.mjs': OPEN_MJS });
    const engineOnly = await ok(
      'npm',
      ['install', '--no-audit', '--no-fund', tarballs.engine],
      alone,
      env,
      INSTALL_TIMEOUT_MS,
    );
    log(`npm install of @baton/engine alone: ${(engineOnly.ms / 1000).toFixed(1)} s`);
    const loaded = JSON.parse(
      (await ok('node', ['imports.mjs', '@baton/engine', '@baton/engine/testing'], alone, env)).stdout,
    );
    expect(loaded['@baton/engine']).toContain('createRunner');
    const modules = () => readdirSync(join(alone, 'node_modules'));
    for (const name of ['better-sqlite3', 'pg', 'tsx', 'esbuild', 'drizzle-orm']) expect(modules()).not.toContain(name);
    expect(nativeAddons(join(alone, 'node_modules'))).toEqual([]);

    const withStore = await ok(
      'npm',
      ['install', '--no-audit', '--no-fund', tarballs.store],
      alone,
      env,
      INSTALL_TIMEOUT_MS,
    );
    log(`npm install of @baton/store next to it, without drivers: ${(withStore.ms / 1000).toFixed(1)} s`);
    expect(modules()).not.toContain('better-sqlite3');
    expect(modules()).not.toContain('pg');
    const opened = await ok('node', ['open.mjs'], alone, env);
    expect(JSON.parse(opened.stdout)).toEqual({
      memory: 'opened',
      sqlite: 'the sqlite: ledger needs better-sqlite3: npm install better-sqlite3@12',
      postgres: 'the postgres: ledger needs pg: npm install pg@8',
      audit: 'the sqlite: audit log needs better-sqlite3: npm install better-sqlite3@12',
    });
    expect(nativeAddons(join(alone, 'node_modules'))).toEqual([]);
  });

  it(
    'npx baton init: the starter installs, its tests pass, it type-checks, and npm run serve serves its flow',
    async () => {
      const started = performance.now();
      // Beside the app, not inside it: nothing may resolve from the app's node_modules.
      const created = await ok('npx', ['baton', 'init', '../starter'], app, env);
      expect(created.stdout).toContain('cd ../starter && npm install && npm test\n  npm run serve\n');
      const starter = join(base, 'starter');
      // The starter asks for @baton/* from the registry; here they are the tarballs just packed.
      const manifest = JSON.parse(readFileSync(join(starter, 'package.json'), 'utf8'));
      const version = JSON.parse(readFileSync(join(ROOT, 'packages/adapters/package.json'), 'utf8')).version;
      for (const name of PACKAGES) {
        expect(manifest.dependencies[`@baton/${name}`]).toBe(`^${version}`);
        manifest.dependencies[`@baton/${name}`] = `file:${tarballs[name]}`;
      }
      writeFileSync(join(starter, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);

      const installed = await ok(
        'npm',
        ['install', '--no-audit', '--no-fund', '--prefer-offline'],
        starter,
        env,
        INSTALL_TIMEOUT_MS,
      );
      log(`npm install in the starter: ${(installed.ms / 1000).toFixed(1)} s`);
      // better-sqlite3's own install script got the prebuild (from the mirror or prebuild-install's cache) instead of compiling.
      expect(compiledHere(join(starter, 'node_modules', 'better-sqlite3'))).toBe(false);
      const tested = await ok('npm', ['test'], starter, env, 120_000);
      expect(tested.stdout).toMatch(/^ℹ pass 6$/m);
      expect(tested.stdout).toMatch(/^ℹ fail 0$/m);
      const typechecked = await ok('npm', ['run', 'typecheck'], starter, env, 120_000);
      log(
        `npm test in the starter: ${(tested.ms / 1000).toFixed(1)} s, npm run typecheck: ${(typechecked.ms / 1000).toFixed(1)} s`,
      );

      // `baton init` wrote baton.config.ts, and the bare `baton serve` of the script reads it.
      const printed = await ok('npx', ['baton', 'serve', '--print-config'], starter, env, 60_000);
      const effective = JSON.parse(printed.stdout) as { fields: Record<string, { value: unknown; source: string }> };
      expect(effective.fields.ledger).toEqual({
        value: 'sqlite:./baton.db',
        source: expect.stringMatching(/^file .*baton\.config\.ts$/),
      });
      expect(effective.fields.http?.source).toMatch(/^file .*baton\.config\.ts$/);

      // The file's own address (127.0.0.1:3000) may be taken here: the flag wins over the file.
      const server = await startServing('npm', ['run', 'serve', '--', '--http', '127.0.0.1:0'], starter, env);
      try {
        expect(server.stderr()).toContain('baton: serving 1 flow at');
        expect(await publishOverHttp(server.url)).toEqual({
          text: 'Published 1.2.3: From the consumer test.',
          asked: ['Publish release 1.2.3?', 'One line for the release notes?'],
          toolCalls: 3,
          isError: false,
        });
        const called = await ok(
          'npm',
          ['run', '--silent', 'call', '--', '--http', server.url],
          starter,
          env,
          60_000,
          'yes\nTyped at the terminal.\n',
        );
        expect(called.stdout.trim()).toBe('Published 1.2.3: Typed at the terminal.');
        expect(existsSync(join(starter, 'baton.db'))).toBe(true);
      } finally {
        await server.stop();
      }
      log(
        `npx baton init to a served flow (install, test, typecheck, serve, two calls): ${((performance.now() - started) / 1000).toFixed(1)} s`,
      );
    },
    INSTALL_TIMEOUT_MS + 5 * 60_000,
  );

  it(
    'a CommonJS project (npm init -y) serves flows.ts and flows.js: durable steps, keyed per instance',
    async () => {
      const cjs = join(base, 'cjs');
      mkdirSync(cjs);
      await ok('npm', ['init', '-y'], cjs, env);
      expect(JSON.parse(readFileSync(join(cjs, 'package.json'), 'utf8')).type ?? 'commonjs').toBe('commonjs');
      writeFileSync(join(cjs, 'flows.ts'), CHARGE_TS);
      writeFileSync(join(cjs, 'flows.js'), CHARGE_JS);
      const installed = await ok(
        'npm',
        [
          'install',
          '--no-audit',
          '--no-fund',
          '--prefer-offline',
          tarballs.engine,
          tarballs.store,
          tarballs.adapters,
          'xstate@5',
          'zod@4',
        ],
        cjs,
        env,
        INSTALL_TIMEOUT_MS,
      );
      log(`npm install in the CommonJS project: ${(installed.ms / 1000).toFixed(1)} s`);
      for (const module of ['flows.ts', 'flows.js']) {
        const charges = join(cjs, `${module}.charges`);
        writeFileSync(charges, '');
        const server = await startBaton(cjs, { ...env, CHARGE_LOG: charges }, [
          'serve',
          module,
          '--http',
          '127.0.0.1:0',
          '--ledger',
          'memory:',
        ]);
        const { client } = await connectHttp(new URL(server.url));
        try {
          const keys: string[] = [];
          // Two instances of the flow with the same arguments.
          for (let instance = 1; instance <= 2; instance++) {
            const args = { order: 'A-1' };
            const first = expectInputRequired(await toolRound(client, { name: 'charge_order', arguments: args }));
            const round = {
              name: 'charge_order',
              arguments: args,
              requestState: first.requestState,
              inputResponses: { confirm: { action: 'accept', content: { confirm: true } } },
            };
            const answer = textOf((await toolRound(client, round)) as { content?: unknown });
            const ran = readFileSync(charges, 'utf8').trim().split('\n');
            expect(ran, module).toHaveLength(instance);
            const key = ran[instance - 1]!;
            expect(answer, module).toBe(`Charged ${key.slice(0, 8)}`);
            // The response was lost: the same round again gets the recorded result; the step does not run again.
            expect(textOf((await toolRound(client, round)) as { content?: unknown }), module).toBe(answer);
            expect(readFileSync(charges, 'utf8').trim().split('\n'), module).toHaveLength(instance);
            keys.push(key);
          }
          expect(keys[1], module).not.toBe(keys[0]);
          for (const key of keys) expect(key, module).toMatch(/^[A-Za-z0-9_-]{43}$/);
          expect(server.stderr(), module).not.toMatch(/error/i);
        } finally {
          await client.close();
          await server.stop();
        }
      }
    },
    INSTALL_TIMEOUT_MS + 2 * 60_000,
  );
});

/** A flow with a durable step, in TypeScript, for a CommonJS project: the step logs its idempotency key to CHARGE_LOG. */
const CHARGE_TS = `import { appendFileSync } from 'node:fs';
import { ask, defineFlow, defineInputs, form, step } from '@baton/engine';
import { assign, setup } from 'xstate';
import { z } from 'zod';

const charge = step('charge', async ({ idempotencyKey }: { idempotencyKey: string }) => {
  appendFileSync(process.env.CHARGE_LOG!, \`\${idempotencyKey}\\n\`);
  return idempotencyKey.slice(0, 8);
});
const inputs = defineInputs({ confirm: form({ message: 'Charge?', schema: z.object({ confirm: z.boolean() }) }) });
const machine = setup({
  types: { input: {} as { order: string }, context: {} as { order: string; charge?: string } },
  actors: { charge },
}).createMachine({
  id: 'charge_order',
  context: ({ input }) => ({ order: input.order }),
  initial: 'confirming',
  states: {
    confirming: { meta: ask(inputs, 'confirm'), on: { 'input.confirm': 'charging' } },
    charging: {
      invoke: { id: 'charge', src: 'charge', onDone: { target: 'charged', actions: assign({ charge: ({ event }) => event.output }) } },
    },
    charged: { type: 'final', output: ({ context }) => \`Charged \${context.charge}\` },
  },
});
export const chargeOrder = defineFlow({ name: 'charge_order', description: 'Charge an order once', args: z.object({ order: z.string() }), inputs, machine });
`;

/** The same flow in plain CommonJS JavaScript. */
const CHARGE_JS = `const { appendFileSync } = require('node:fs');
const { ask, defineFlow, defineInputs, form, step } = require('@baton/engine');
const { assign, setup } = require('xstate');
const { z } = require('zod');

const charge = step('charge', async ({ idempotencyKey }) => {
  appendFileSync(process.env.CHARGE_LOG, \`\${idempotencyKey}\\n\`);
  return idempotencyKey.slice(0, 8);
});
const inputs = defineInputs({ confirm: form({ message: 'Charge?', schema: z.object({ confirm: z.boolean() }) }) });
const machine = setup({ actors: { charge } }).createMachine({
  id: 'charge_order',
  context: ({ input }) => ({ order: input.order }),
  initial: 'confirming',
  states: {
    confirming: { meta: ask(inputs, 'confirm'), on: { 'input.confirm': 'charging' } },
    charging: {
      invoke: { id: 'charge', src: 'charge', onDone: { target: 'charged', actions: assign({ charge: ({ event }) => event.output }) } },
    },
    charged: { type: 'final', output: ({ context }) => \`Charged \${context.charge}\` },
  },
});
module.exports = { chargeOrder: defineFlow({ name: 'charge_order', description: 'Charge an order once', args: z.object({ order: z.string() }), inputs, machine }) };
`;

/** Opens a memory ledger, then tries SQLite and PostgreSQL ones whose drivers are not installed. */
const OPEN_MJS = `import { openAuditLog, openLedger } from '@baton/store';
const outcome = async (open) => {
  try {
    await open();
    return 'opened';
  } catch (error) {
    return error.message;
  }
};
console.log(JSON.stringify({
  memory: await outcome(async () => (await openLedger('memory:')).close()),
  sqlite: await outcome(() => openLedger('sqlite:./ledger.db')),
  postgres: await outcome(() => openLedger('postgres://127.0.0.1:1/baton')),
  audit: await outcome(() => openAuditLog('sqlite:./ledger.db')),
}));
`;

/** Every compiled addon (`*.node`) under a folder. */
function nativeAddons(dir: string): string[] {
  return (readdirSync(dir, { recursive: true }) as string[]).filter((path) => path.endsWith('.node'));
}
