/**
 * `baton` failures: bad flags, an unreadable or empty flows module, a short
 * key, an unusable auth-tokens file, an unreachable database. Each prints
 * exactly one line on stderr (never a stack trace) and exits non-zero; a
 * missing `BATON_KEYS` only warns.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKey } from '@baton/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FLOWS, runCli, startServe } from './helpers/mcpClients.js';

let dir: string;
const key = generateKey();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'baton-cli-'));
  await writeFile(join(dir, 'throws.ts'), "throw new Error('flows module exploded');\n");
  await writeFile(join(dir, 'empty.ts'), 'export const answer = 42;\n');
  await writeFile(join(dir, 'syntax.ts'), 'export const = ;\n');
  await writeFile(join(dir, 'tokens-bad.json'), '{ "token": 42 }');
});
afterAll(async () => {
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
      /cannot load flows module .*throws\.ts: flows module exploded/,
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

it('warns on stderr and uses a random key when BATON_KEYS is not set', async () => {
  const server = await startServe([FLOWS, '--http', '127.0.0.1:0'], { BATON_KEYS: '' });
  try {
    expect(server.stderr()).toMatch(/^baton: warning: BATON_KEYS is not set: using a random per-process key/);
  } finally {
    expect(await server.stop()).toBe(0);
  }
});
