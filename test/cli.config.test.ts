/**
 * `baton serve`'s configuration (issue 36, item 4): flags, `BATON_*` environment variables and a
 * `baton.config.ts` (`defineConfig` from `@baton/adapters`), precedence flag > environment > file;
 * `--print-config` shows each value's source with secrets redacted and exits 0 without binding a
 * port; a bad file field or environment value is one line and exit 2; the file refuses inline
 * secrets; a real server starts from a config file alone and from the environment alone and
 * answers the official client's `tools/list`.
 */

import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateKey } from '@baton/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliArgs, connectHttp, FLOWS, ROOT, startServe } from './helpers/mcpClients.js';

let dir: string;
const key = generateKey();

beforeAll(() => {
  // Inside the repository, so that the file's `@baton/adapters` import resolves.
  mkdirSync(join(ROOT, '.tmp'), { recursive: true });
  dir = mkdtempSync(join(ROOT, '.tmp', 'config-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Write `baton.config.ts` with `body` as defineConfig's argument into a fresh folder; returns the folder. */
function configFolder(name: string, body: string): string {
  const folder = join(dir, name);
  mkdirSync(folder);
  writeFileSync(
    join(folder, 'baton.config.ts'),
    `import { defineConfig } from '@baton/adapters';\nexport default defineConfig(${body});\n`,
  );
  return folder;
}

/** Run `baton serve ...` in `cwd` with `env` (BATON_* of this process dropped), bounded: 30 s. */
function serve(args: string[], cwd: string, env: Record<string, string> = {}) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('BATON_')));
  const child = spawn(process.execPath, cliArgs(['serve', ...args]), {
    cwd,
    env: { ...clean, BATON_KEYS: key, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // Bounded as runCli is: a child that hangs is killed after 30 s instead of outliving the test.
  const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once('close', (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr });
    }),
  );
}

function oneLine(result: { code: number | null; stderr: string }, pattern: RegExp): void {
  expect(result.stderr.trimEnd().split('\n'), result.stderr).toEqual([expect.stringMatching(pattern)]);
  expect(result.code).toBe(2);
}

const FLOWS_FIELD = JSON.stringify(FLOWS);

describe.concurrent('baton serve --print-config', () => {
  it('takes each value from the flag, else the environment, else the file, and names the source', async () => {
    const folder = configFolder(
      'precedence',
      `{ flows: ${FLOWS_FIELD}, http: '127.0.0.1:0', ttl: 100, maxTtl: 1000, waitInCall: 3, audit: true, ledger: 'memory:' }`,
    );
    const result = await serve(['--print-config', '--ttl', '300'], folder, { BATON_TTL: '200', BATON_MAX_TTL: '2000' });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const printed = JSON.parse(result.stdout);
    expect(printed.file).toBe('baton.config.ts');
    expect(printed.fields).toMatchObject({
      flows: { value: FLOWS, source: 'file baton.config.ts' },
      http: { value: '127.0.0.1:0', source: 'file baton.config.ts' },
      ttl: { value: 300, source: 'flag' },
      maxTtl: { value: 2000, source: 'env BATON_MAX_TTL' },
      waitInCall: { value: 3, source: 'file baton.config.ts' },
      audit: { value: true, source: 'file baton.config.ts' },
      roundBudget: { value: 10000, source: 'default' },
    });
    expect(printed.keys).toEqual({ value: '[redacted]', source: 'env BATON_KEYS' });
  });

  it('a switch the environment sets false overrides the file, and BATON_STDIO=false leaves the file its transport', async () => {
    const folder = configFolder(
      'switch-off',
      `{ flows: ${FLOWS_FIELD}, http: '127.0.0.1:0', audit: true, allowReplays: true, ledger: 'memory:' }`,
    );
    const result = await serve(['--print-config'], folder, { BATON_AUDIT: 'false', BATON_STDIO: '0' });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).fields).toMatchObject({
      http: { value: '127.0.0.1:0', source: 'file baton.config.ts' },
      stdio: { value: false, source: 'env BATON_STDIO' },
      audit: { value: false, source: 'env BATON_AUDIT' },
      allowReplays: { value: true, source: 'file baton.config.ts' },
    });
  });

  it('redacts secrets: inline webhook secrets and the password of a ledger or OTLP URL', async () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const result = await serve([FLOWS, '--print-config', '--stdio'], dir, {
      BATON_NOTIFY_WEBHOOK: 'http://127.0.0.1:1/hook',
      BATON_NOTIFY_SECRET: secret,
      BATON_LEDGER: 'postgres://baton:hunter2@127.0.0.1:1/baton',
      BATON_OTLP: 'http://otel:s3cret@127.0.0.1:4318',
    });
    expect(result.code).toBe(0);
    expect(result.stdout).not.toContain(secret);
    expect(result.stdout).not.toContain('hunter2');
    expect(result.stdout).not.toContain('s3cret');
    expect(JSON.parse(result.stdout).fields).toMatchObject({
      notifySecret: { value: '[redacted]', source: 'env BATON_NOTIFY_SECRET' },
      ledger: { value: 'postgres://baton:[redacted]@127.0.0.1:1/baton', source: 'env BATON_LEDGER' },
      otlp: { value: 'http://otel:[redacted]@127.0.0.1:4318', source: 'env BATON_OTLP' },
      stdio: { value: true, source: 'flag' },
    });
  });
});

describe.concurrent('a bad configuration is one line, exit 2', () => {
  it('a field of the wrong type in the file names the file and the field', async () => {
    const folder = configFolder('bad-type', `{ flows: ${FLOWS_FIELD}, stdio: true, maxTtl: 'soon' as never }`);
    oneLine(await serve([], folder), /^baton: baton\.config\.ts: maxTtl: .*expected number/);
  });

  it('an unknown field in the file is named', async () => {
    const folder = configFolder('unknown', `{ flows: ${FLOWS_FIELD}, stdio: true, maxTTL: 5 } as never`);
    oneLine(await serve([], folder), /^baton: baton\.config\.ts: unknown field "maxTTL"/);
  });

  it('a value out of range in the file is checked as the flag is', async () => {
    const folder = configFolder('range', `{ flows: ${FLOWS_FIELD}, stdio: true, ttl: -5 }`);
    oneLine(await serve([], folder), /^baton: baton\.config\.ts: ttl expects a whole number of seconds >= 1, got "-5"/);
  });

  it('an inline secret in the file is refused, pointing at the file or environment form', async () => {
    const folder = configFolder('secret', `{ flows: ${FLOWS_FIELD}, stdio: true, notifySecret: 'whsec_x' } as never`);
    oneLine(
      await serve([], folder),
      /^baton: baton\.config\.ts: notifySecret: a secret does not belong in the config file: use notifySecretsFile .* BATON_NOTIFY_SECRET$/,
    );
  });

  it('a bad environment value names the variable', async () => {
    oneLine(await serve([FLOWS, '--stdio'], dir, { BATON_TTL: 'soon' }), /^baton: BATON_TTL expects a whole number/);
    oneLine(
      await serve([FLOWS, '--stdio'], dir, { BATON_AUDIT: 'yes' }),
      /^baton: BATON_AUDIT expects true, false, 1 or 0/,
    );
  });

  it('a combination that does not hold names each value where it was given', async () => {
    oneLine(
      await serve([FLOWS, '--stdio'], dir, { BATON_AUDIT: 'true' }),
      /^baton: BATON_AUDIT records on the ledger's database: give --ledger too/,
    );
    const folder = configFolder('no-ledger', `{ flows: ${FLOWS_FIELD}, stdio: true, noScheduler: true }`);
    oneLine(
      await serve([], folder),
      /^baton: baton\.config\.ts: noScheduler turns off the scheduler of a ledger: give --ledger too/,
    );
  });

  it('--config naming a missing file', async () => {
    oneLine(await serve(['--config', 'nope.ts'], dir), /^baton: config file nope\.ts does not exist \(--config\)/);
  });
});

/** The official client lists the tools of the server at `url`. */
async function toolNames(url: URL): Promise<string[]> {
  const { client } = await connectHttp(url);
  try {
    return (await client.listTools()).tools.map((tool) => tool.name).sort();
  } finally {
    await client.close();
  }
}

describe('baton serve starts from a config file alone, and from the environment alone', () => {
  it('a config file alone (--config), answering tools/list', async () => {
    const folder = configFolder('alone', `{ flows: ${FLOWS_FIELD}, http: '127.0.0.1:0' }`);
    const server = await startServe(['--config', join(folder, 'baton.config.ts')], { BATON_KEYS: key });
    try {
      expect((await toolNames(server.url)).length).toBeGreaterThan(0);
    } finally {
      await server.stop();
    }
  });

  it('the environment alone, answering tools/list', async () => {
    const server = await startServe([], { BATON_KEYS: key, BATON_FLOWS: FLOWS, BATON_HTTP: '127.0.0.1:0' });
    try {
      expect((await toolNames(server.url)).length).toBeGreaterThan(0);
    } finally {
      await server.stop();
    }
  });
});
