/**
 * The command the conformance suite runs for each client scenario (`conformance client
 * --command "tsx scripts/lib/conformanceClientCommand.ts" --scenario NAME`): the suite appends
 * its server URL as the last argument and names the scenario in `MCP_CONFORMANCE_SCENARIO`
 * (and, for some, a JSON context in `MCP_CONFORMANCE_CONTEXT`). This wrapper only maps the
 * scenario to the `baton call` command lines a user would type (`CALLS`), and runs each as a
 * real `baton call` process (the CLI's `main.ts`, or its test build under `--cli built`), answering its prompts on stdin as a user
 * would; everything on the wire is `baton call`'s own. Calls of one step run at the same time,
 * steps one after another; the exit code is the first non-zero one.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { batonNodeArgs, CLI_ENV, cliFrom } from './batonCli.js';
import { AUTH_SCENARIOS } from './clientScenarios.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** `node` arguments that run `baton`: its sources through tsx, or the test build (`--cli built`). */
const BATON = batonNodeArgs(cliFrom(process.env[CLI_ENV]));

/** What the user types at the prompts of a call. */
export type Baton = (argv: readonly string[], input?: string) => Promise<{ code: number; stdout: string }>;

/** The calls of every step must exit 0; the first non-zero code is the result. */
async function steps(baton: Baton, ...groups: [readonly string[], string?][][]): Promise<number> {
  for (const group of groups) {
    const done = await Promise.all(group.map(([argv, input]) => baton(argv, input)));
    const failed = done.find((d) => d.code !== 0);
    if (failed) return failed.code;
  }
  return 0;
}

/** The Client ID Metadata Document URL the suite's own client uses (SEP-991). */
const CIMD_URL = 'https://conformance-test.local/client-metadata.json';

/** `baton call --oauth` for `test-tool`, signing in through the suite's authorization server. */
const oauthCall = (url: string, _context: Context, baton: Baton) =>
  steps(baton, [[['test-tool', '--http', url, '--oauth']]]);

/** The `baton call` command lines of each scenario (the suite's URL, its context, a way to run one). */
export const CALLS: Record<string, (url: string, context: Context, baton: Baton) => Promise<number>> = {
  tools_call: (url, _c, baton) => steps(baton, [[['add_numbers', '--args', '{"a":2,"b":3}', '--http', url]]]),
  'request-metadata': (url, _c, baton) => steps(baton, [[['--list', '--http', url]]]),
  'sep-2322-client-request-state': (url, _c, baton) =>
    steps(
      baton,
      [[['test_mrtr_echo_state', '--http', url], 'y\n']],
      [[['test_mrtr_no_state', '--http', url], 'y\n'], [['test_mrtr_unrelated', '--http', url]]],
      [[['test_mrtr_no_result_type', '--http', url]]],
    ),
  'http-standard-headers': (url, _c, baton) => steps(baton, [[['test_headers', '--http', url]]]),
  'http-custom-headers': (url, context, baton) =>
    steps(
      baton,
      (context.toolCalls ?? []).map((c) => [[c.name, '--args', JSON.stringify(c.arguments), '--http', url]]),
    ),
  // The invalid tool is refused by baton call ("has no tool", exit 1) before any tools/call.
  'http-invalid-tool-headers': async (url, _c, baton) => {
    const valid = await steps(baton, [[['valid_tool', '--args', '{"region":"us-west1"}', '--http', url]]]);
    const invalid = await baton(['invalid_empty_header', '--args', '{"region":"us-west1"}', '--http', url]);
    return valid !== 0 ? valid : invalid.code === 0 ? 1 : 0;
  },
  'json-schema-ref-no-deref': (url, _c, baton) => steps(baton, [[['--list', '--http', url]]]),
  // List, then pass the listed schema back as a user would copy it from `--list`.
  'json-schema-2020-12-preservation': async (url, _c, baton) => {
    const listed = await baton(['--list', '--http', url]);
    if (listed.code !== 0) return listed.code;
    const tools = JSON.parse(listed.stdout) as { name: string; inputSchema: unknown }[];
    const schema = tools.find((t) => t.name === 'json_schema_2020_12_tool')?.inputSchema;
    return steps(baton, [[['json_schema_echo', '--args', JSON.stringify({ schema }), '--http', url]]]);
  },
};
// The suite's authorization server fetches no document: any HTTPS URL with a path names the client.
CALLS['auth/basic-cimd'] = (url, _c, baton) =>
  steps(baton, [[['test-tool', '--http', url, '--oauth', '--client-id', CIMD_URL]]]);
// Pre-registered credentials (from the suite's context) in a file, as a user keeps a secret.
CALLS['auth/pre-registration'] = (url, context, baton) => {
  const secretFile = join(mkdtempSync(join(tmpdir(), 'baton-conformance-secret-')), 'client.secret');
  writeFileSync(secretFile, `${context.client_secret ?? ''}\n`, { mode: 0o600 });
  const argv = [
    'test-tool',
    '--http',
    url,
    '--oauth',
    '--client-id',
    context.client_id ?? '',
    '--client-secret-file',
    secretFile,
  ];
  return steps(baton, [[argv]]);
};
for (const name of AUTH_SCENARIOS) CALLS[name] ??= oauthCall;

/** `MCP_CONFORMANCE_CONTEXT`: what some scenarios hand the client (the calls to make, credentials). */
export interface Context {
  toolCalls?: { name: string; arguments: Record<string, unknown> }[];
  client_id?: string;
  client_secret?: string;
}

/** Run one `baton call` with `input` on its stdin; its stdout is passed through and kept. */
function baton(env: NodeJS.ProcessEnv): Baton {
  return (argv, input) =>
    new Promise((done) => {
      const child = spawn(process.execPath, [...BATON, 'call', ...argv], {
        cwd: ROOT,
        env,
        stdio: ['pipe', 'pipe', 'inherit'],
      });
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk;
        process.stdout.write(chunk);
      });
      child.stdin.end(input ?? '');
      child.on('close', (code) => done({ code: code ?? 1, stdout }));
    });
}

async function main(): Promise<number> {
  const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
  const url = process.argv.at(-1) ?? '';
  const calls = CALLS[scenario];
  if (!calls) {
    process.stderr.write(`conformanceClientCommand: no baton call command for scenario "${scenario}"\n`);
    return 2;
  }
  const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}') as Context;
  // A fresh OAuth cache per scenario (no token of another scenario's server is reused), and the
  // "browser" that follows the authorization redirect.
  const env = {
    ...process.env,
    XDG_CONFIG_HOME: mkdtempSync(join(tmpdir(), 'baton-conformance-client-')),
    BROWSER: join(ROOT, 'scripts', 'lib', 'conformanceBrowser.mjs'),
  };
  return calls(url, context, baton(env));
}

process.exitCode = await main();
