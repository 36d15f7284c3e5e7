/**
 * `baton` failures: bad flags, an unreadable or empty flows module, a short
 * or non-random key, an unusable auth-tokens file or a short token, an
 * unreachable database, a taken port. Each prints exactly one line on stderr
 * (never a stack trace, never a secret) and exits non-zero, leaves nothing
 * behind (no ledger file for a taken port) and never hangs (an inspector
 * that holds the event loop); a missing `BATON_KEYS` only warns. Also
 * `baton keygen` (and its `--webhook-secret`), `serve --help` on what
 * `--notify-webhook` sends, operator commands on a ledger file that does not
 * exist (refused, none created), and flows that need a ledger served without one.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKey, parseKeyRingEnv } from '@baton/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// standardwebhooks is a dependency of @baton/adapters (which verifies with it), not of the workspace root.
import { Webhook } from '../packages/adapters/node_modules/standardwebhooks/dist/index.js';
import { checkWebhookSecret } from '../packages/adapters/src/delivery/outboxDelivery.js';
import { connectHttp, FLOWS, ROOT, runCli, startServe } from './helpers/mcpClients.js';

let dir: string;
const key = generateKey();
const LONG_TOKEN = 'bob-token-0123456789abcdef';
/** A port some other program holds. */
let taken: Server;
let takenPort: number;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'baton-cli-'));
  await writeFile(join(dir, 'throws.ts'), "throw new Error('flows module exploded');\n");
  await writeFile(join(dir, 'empty.ts'), 'export const answer = 42;\n');
  await writeFile(join(dir, 'syntax.ts'), 'export const = ;\n');
  await writeFile(join(dir, 'tokens-bad.json'), '{ "token": 42 }');
  await writeFile(join(dir, 'tokens-short.json'), JSON.stringify({ [LONG_TOKEN]: 'bob', hunter2: 'alice' }));
  // An inspector that holds the event loop open, as a WebSocket inspector's socket does.
  await writeFile(
    join(dir, 'busy-inspector.mjs'),
    "import { createServer } from 'node:net';\ncreateServer().listen(0, '127.0.0.1');\nexport default function inspect() {}\n",
  );
  await writeFile(
    join(dir, 'ledger-only.ts'),
    `export { grantTemporaryAccess, redeemAccessCode } from ${JSON.stringify(join(ROOT, 'examples/approvals/accessCodes.ts'))};\n`,
  );
  taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  takenPort = (taken.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise((resolve) => taken?.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

function expectOneLine(result: { code: number | null; stderr: string }, code: number, pattern: RegExp) {
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines, result.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^baton: /);
  expect(lines[0]).toMatch(pattern);
  expect(result.stderr).not.toMatch(/\bat .+:\d+:\d+/);
  expect(result.code).toBe(code);
}

describe.concurrent('usage errors: one line, exit 2', () => {
  it.each([
    [['serve'], /missing <flows-module>/],
    [['serve', FLOWS], /exactly one of --http HOST:PORT or --stdio/],
    [['serve', FLOWS, '--http', '127.0.0.1:0', '--stdio'], /exactly one of/],
    [['serve', FLOWS, '--http', 'localhost'], /--http expects HOST:PORT/],
    [['serve', FLOWS, '--http'], /--http needs a value/],
    [['serve', FLOWS, '--stdio', '--bogus'], /unknown option --bogus/],
    [['serve', FLOWS, '--stdio', '--ttl', 'soon'], /--ttl expects a whole number/],
    [['serve', FLOWS, '--stdio', '--ttl', '-5'], /--ttl expects a whole number of seconds >= 1, got "-5"$/],
    [['serve', FLOWS, '--stdio', '--ttl', '999999999999'], /--ttl is at most 31622400 seconds \(366 days\)/],
    [['serve', FLOWS, '--stdio', '--ttl', '2600000'], /--ttl 2600000 is longer than --max-ttl 2592000 \(the default\)/],
    [['serve', FLOWS, '--stdio', '--ttl', '900', '--max-ttl', '600'], /--ttl 900 is longer than --max-ttl 600,/],
    [['serve', FLOWS, '--stdio', '--max-ttl', '-1'], /--max-ttl expects a whole number of seconds >= 1, got "-1"$/],
    [['serve', FLOWS, '--stdio', '--ledger', '--audit'], /--ledger needs a value/],
    [['call', 'tool', '--http', '-5'], /--http expects a URL such as http:\/\/127\.0\.0\.1:8080\/mcp, got "-5"/],
    [['keygen', 'extra'], /keygen takes no arguments/],
    [['serve', FLOWS, '--stdio', '--auth-tokens', 'tokens.json'], /--auth-tokens applies to --http only/],
    [['frobnicate'], /unknown command "frobnicate"/],
  ])('baton %j', async (args, pattern) => {
    expectOneLine(await runCli(args, { BATON_KEYS: key }), 2, pattern);
  });
});

describe.concurrent('start-up failures: one line, exit 1', () => {
  const http = ['--http', '127.0.0.1:0'];
  it('a flows module that does not exist', async () => {
    expectOneLine(await runCli(['serve', join(dir, 'missing.ts'), ...http], { BATON_KEYS: key }), 1, /does not exist/);
  });

  it('a flows module that throws while loading', async () => {
    expectOneLine(
      await runCli(['serve', join(dir, 'throws.ts'), ...http], { BATON_KEYS: key }),
      1,
      /cannot load flows module .*throws\.ts: .*throws\.ts:\d+:\d+: flows module exploded/,
    );
  });

  it('a flows module that does not parse', async () => {
    expectOneLine(
      await runCli(['serve', join(dir, 'syntax.ts'), ...http], { BATON_KEYS: key }),
      1,
      /cannot load flows module/,
    );
  });

  it('a flows module without flows', async () => {
    expectOneLine(await runCli(['serve', join(dir, 'empty.ts'), ...http], { BATON_KEYS: key }), 1, /exports no flow/);
  });

  it('a key shorter than 32 bytes', async () => {
    const short = Buffer.alloc(16, 7).toString('base64url');
    expectOneLine(
      await runCli(['serve', FLOWS, ...http], { BATON_KEYS: `${key},${short}` }),
      1,
      /BATON_KEYS: key 2 is 16 bytes; at least 32 are required/,
    );
  });

  it('a key that does not look random (all zeros), never printed', async () => {
    const zeros = Buffer.alloc(32).toString('base64url');
    const result = await runCli(['serve', FLOWS, ...http], { BATON_KEYS: `${key},${zeros}` });
    expectOneLine(result, 1, /BATON_KEYS: key 2 does not look random \(only 1 distinct byte value; .*"baton keygen"$/);
    expect(result.stderr).not.toContain(zeros);
  });

  it('a passphrase as a key (43 lower-case letters, 32 bytes once decoded), never printed', async () => {
    const passphrase = 'correcthorsebatterystaplecorrecthorsebatter';
    const result = await runCli(['serve', FLOWS, ...http], { BATON_KEYS: passphrase });
    expectOneLine(
      result,
      1,
      /BATON_KEYS: key 1 does not look random \(it is written in letters of one case only, like a passphrase, .*"baton keygen"$/,
    );
    expect(result.stderr).not.toContain(passphrase);
  });

  it('a bearer token shorter than 16 characters, never printed', async () => {
    const file = join(dir, 'tokens-short.json');
    const result = await runCli(['serve', FLOWS, ...http, '--auth-tokens', file], { BATON_KEYS: key });
    expectOneLine(
      result,
      1,
      /auth tokens file .*tokens-short\.json: the token of principal "alice" is shorter than 16 characters/,
    );
    expect(result.stderr).not.toContain('hunter2');
    expect(result.stderr).not.toContain(LONG_TOKEN);
  });

  it('a taken port, before the ledger file is created', async () => {
    const db = join(dir, 'taken.db');
    expectOneLine(
      await runCli(['serve', FLOWS, '--http', `127.0.0.1:${takenPort}`, '--ledger', `sqlite:${db}`], {
        BATON_KEYS: key,
      }),
      1,
      /cannot listen on 127\.0\.0\.1:\d+: .*EADDRINUSE/,
    );
    expect(existsSync(db)).toBe(false);
  });

  it('with --inspect: a taken port, and a ledger that fails after the inspector started, exit without hanging', async () => {
    const inspect = ['--inspect', join(dir, 'busy-inspector.mjs')];
    expectOneLine(
      await runCli(['serve', FLOWS, '--http', `127.0.0.1:${takenPort}`, ...inspect], { BATON_KEYS: key }),
      1,
      /cannot listen on/,
    );
    expectOneLine(
      await runCli(['serve', FLOWS, ...http, ...inspect, '--ledger', 'postgres://baton@127.0.0.1:1/baton'], {
        BATON_KEYS: key,
      }),
      1,
      /cannot open ledger: /,
    );
  });

  it('a module whose every flow needs a ledger, served without one: one line, naming them', async () => {
    // The "not serving" warnings are printed only once serving starts: here the fatal line is all.
    expectOneLine(
      await runCli(['serve', join(dir, 'ledger-only.ts'), ...http], { BATON_KEYS: key }),
      1,
      /every flow of .*ledger-only\.ts needs a ledger \(grant_temporary_access, redeem_access_code\): start with --ledger URL/,
    );
  });

  it('an unusable auth-tokens file', async () => {
    expectOneLine(
      await runCli(['serve', FLOWS, ...http, '--auth-tokens', join(dir, 'tokens-bad.json')], { BATON_KEYS: key }),
      1,
      /auth tokens file .* non-empty principal id/,
    );
    expectOneLine(
      await runCli(['serve', FLOWS, ...http, '--auth-tokens', join(dir, 'nope.json')], { BATON_KEYS: key }),
      1,
      /cannot read auth tokens file .*ENOENT/,
    );
  });

  it('an unreachable database', async () => {
    expectOneLine(
      await runCli(['serve', FLOWS, ...http, '--ledger', 'postgres://baton:secret@127.0.0.1:1/baton'], {
        BATON_KEYS: key,
      }),
      1,
      /cannot open ledger: .*127\.0\.0\.1/,
    );
  });

  it('an unsupported ledger URL', async () => {
    expectOneLine(
      await runCli(['serve', FLOWS, ...http, '--ledger', 'mysql://db/baton'], { BATON_KEYS: key }),
      1,
      /cannot open ledger: Unsupported ledger URL/,
    );
  });

  it('never prints a password from the ledger URL', async () => {
    const result = await runCli(['serve', FLOWS, ...http, '--ledger', 'postgres://baton:hunter2@127.0.0.1:1/baton'], {
      BATON_KEYS: key,
    });
    expect(result.stderr).not.toContain('hunter2');
  });
});

it('baton keygen prints one fresh key on stdout, which BATON_KEYS accepts', async () => {
  const [a, b] = await Promise.all([runCli(['keygen']), runCli(['keygen'])]);
  for (const run of [a, b]) {
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(/^[A-Za-z0-9_-]{43}\n$/);
  }
  expect(a.stdout).not.toBe(b.stdout);
  expect(parseKeyRingEnv(`${a.stdout.trim()},${b.stdout.trim()}`).keys).toHaveLength(2);
});

it('baton keygen --webhook-secret prints a Standard Webhooks secret that --notify-secret and standardwebhooks take', async () => {
  const [a, b] = await Promise.all([runCli(['keygen', '--webhook-secret']), runCli(['keygen', '--webhook-secret'])]);
  for (const run of [a, b]) {
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(/^whsec_[A-Za-z0-9+/]{43}=\n$/);
    expect(Buffer.from(run.stdout.trim().slice('whsec_'.length), 'base64')).toHaveLength(32);
  }
  expect(a.stdout).not.toBe(b.stdout);
  const secret = a.stdout.trim();
  expect(checkWebhookSecret(secret)).toBe(secret);
  const hook = new Webhook(secret);
  const at = new Date();
  const body = '{"type":"decision.made"}';
  const headers = {
    'webhook-id': 'msg_1',
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': hook.sign('msg_1', at, body),
  };
  expect(hook.verify(body, headers)).toEqual({ type: 'decision.made' });
  // baton serve takes it (a bad one is a usage error, exit 2): over stdio, it serves until stdin closes.
  const served = await runCli(
    ['serve', FLOWS, '--stdio', '--notify-webhook', 'http://127.0.0.1:1/hook', '--notify-secret', secret],
    { BATON_KEYS: key },
    '',
  );
  expect(served.stderr).toContain('serving');
  expect(served.code).toBe(0);
});

it('baton serve --help says every notification --notify-webhook sends', async () => {
  const help = await runCli(['serve', '--help']);
  const text = help.stderr.replace(/\s+/g, ' ');
  for (const type of ['decision.requested', 'decision.made', 'request.ended', 'flow.notification']) {
    expect(text).toContain(type);
  }
  expect(text).not.toContain('for each decision requested and each decision made');
});

describe.concurrent('operator commands refuse a SQLite ledger file that does not exist, and create none', () => {
  it.each([
    [['runs', 'list']],
    [['runs', 'show', 'R-1']],
    [['runs', 'terminate', 'R-1', '--reason', 'typo']],
    [['delegates', 'list']],
  ])('baton %j --ledger sqlite:<missing>', async (args) => {
    const missing = join(dir, 'typo', `missing-${args.join('-')}.db`);
    const result = await runCli([...args, '--ledger', `sqlite:${missing}`], { BATON_KEYS: key });
    expectOneLine(result, 1, /^baton: no ledger at .*missing-.*\.db: the file does not exist/);
    expect(existsSync(missing)).toBe(false);
    expect(existsSync(join(dir, 'typo'))).toBe(false);
  });

  it('baton inspect --audit sqlite:<missing>', async () => {
    const missing = join(dir, 'missing-audit.db');
    const result = await runCli(['inspect', FLOWS, '--audit', `sqlite:${missing}`], { BATON_KEYS: key });
    expectOneLine(result, 1, /^baton: no ledger at .*missing-audit\.db: the file does not exist/);
    expect(existsSync(missing)).toBe(false);
  });
});

it('leaves out the flows that need a ledger when served without one, one line each, and serves the rest', async () => {
  const server = await startServe(['examples/approvals', '--http', '127.0.0.1:0'], { BATON_KEYS: key });
  try {
    const warnings = server
      .stderr()
      .split('\n')
      .filter((line) => line.includes('not serving'));
    expect(warnings).toEqual([
      'baton: warning: not serving expense_approval: it awaits decisions by others, which are kept in a ledger; start with --ledger URL to serve it',
      'baton: warning: not serving refund_request: it awaits decisions by others, which are kept in a ledger; start with --ledger URL to serve it',
      'baton: warning: not serving grant_temporary_access: it needs a ledger; start with --ledger URL to serve it',
      'baton: warning: not serving redeem_access_code: it needs a ledger; start with --ledger URL to serve it',
    ]);
    expect(server.stderr()).toMatch(/serving 2 flows at http/);
    const { client } = await connectHttp(server.url);
    const names = (await client.listTools()).tools.map((tool) => tool.name).sort();
    expect(names).toEqual(['deploy_production', 'draft_release_notes']);
    await client.close();
  } finally {
    expect(await server.stop()).toBe(0);
  }
});

it('warns on stderr and uses a random key when BATON_KEYS is not set', async () => {
  const server = await startServe([FLOWS, '--http', '127.0.0.1:0'], { BATON_KEYS: '' });
  try {
    expect(server.stderr()).toMatch(/^baton: warning: BATON_KEYS is not set: using a random per-process key/);
  } finally {
    expect(await server.stop()).toBe(0);
  }
});
