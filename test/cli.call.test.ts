/**
 * `baton call`: the schema-to-prompt logic as pure functions, the flags
 * (one line, exit 2), and the terminal client driven for real through tmux
 * against `baton serve examples/approvals`: prompts answered with
 * `send-keys` (one invalid answer re-prompted with its reason), the screen
 * read with `capture-pane`; and two people on one server with a SQLite
 * ledger and an --auth-tokens file: the requester's call prints the waiting
 * line, the manager declines in `baton call baton_decide`'s prompted form,
 * the requester's `baton call baton_resume` gets the outcome. Without tmux
 * the terminal cases are skipped locally and fail when CI=true.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  parseCallArgs,
  resultText,
  splitCommand,
  TOKEN_AGAIN,
  WAITING_ROUND,
  waitingLine,
} from '../packages/adapters/src/cli/call.js';
import {
  askForm,
  choicesOf,
  type Field,
  type FieldSchema,
  fieldsOf,
  parseAnswer,
  promptFor,
} from '../packages/adapters/src/cli/formPrompt.js';
import { CLI, ROOT, runCli, type ServeProcess, sleep, startServe } from './helpers/mcpClients.js';

const field = (schema: FieldSchema, required = true, name = 'f'): Field => ({ name, schema, required });
const value = (f: Field, input: string) => {
  const answer = parseAnswer(f, input);
  if (!answer.ok || 'skip' in answer) throw new Error(`expected a value, got ${JSON.stringify(answer)}`);
  return answer.value;
};
const reason = (f: Field, input: string) => {
  const answer = parseAnswer(f, input);
  if (answer.ok) throw new Error(`expected a refusal, got ${JSON.stringify(answer)}`);
  return answer.reason;
};

describe('form prompts: parsing and validation', () => {
  it('reads booleans as yes/no and refuses anything else', () => {
    const f = field({ type: 'boolean' });
    for (const yes of ['y', 'YES', 'true', '1']) expect(value(f, yes)).toBe(true);
    for (const no of ['n', 'No', 'false', '0']) expect(value(f, no)).toBe(false);
    expect(reason(f, 'maybe')).toBe('expected yes or no');
  });

  it('checks string length and the email, uri, date and date-time formats', () => {
    expect(reason(field({ type: 'string', minLength: 3 }), 'ab')).toBe('must be at least 3 characters');
    expect(reason(field({ type: 'string', maxLength: 2 }), 'abc')).toBe('must be at most 2 characters');
    expect(value(field({ type: 'string', maxLength: 3 }), '  abc  ')).toBe('abc');
    const email = field({ type: 'string', format: 'email' });
    expect(value(email, 'ada@example.com')).toBe('ada@example.com');
    expect(reason(email, 'ada')).toMatch(/email address/);
    const uri = field({ type: 'string', format: 'uri' });
    expect(value(uri, 'https://example.com/x')).toBe('https://example.com/x');
    expect(reason(uri, 'example dot com')).toMatch(/URI/);
    const date = field({ type: 'string', format: 'date' });
    expect(value(date, '2026-07-28')).toBe('2026-07-28');
    expect(reason(date, '2026-02-30')).toMatch(/YYYY-MM-DD/);
    const dateTime = field({ type: 'string', format: 'date-time' });
    expect(value(dateTime, '2026-07-28T14:30:00Z')).toBe('2026-07-28T14:30:00Z');
    expect(reason(dateTime, 'tomorrow')).toMatch(/date-time/);
  });

  it('checks numbers, integers and their bounds', () => {
    const n = field({ type: 'number', minimum: 0, maximum: 10 });
    expect(value(n, '2.5')).toBe(2.5);
    expect(reason(n, 'abc')).toBe('expected a number');
    expect(reason(n, '11')).toBe('must be at most 10');
    expect(reason(n, '-1')).toBe('must be at least 0');
    const i = field({ type: 'integer' });
    expect(value(i, '42')).toBe(42);
    expect(reason(i, '4.2')).toBe('expected a whole number');
    expect(reason(i, '0x10')).toBe('expected a whole number');
  });

  it('picks single-select options by number, value or title (enum, enumNames, oneOf)', () => {
    const plain = field({ type: 'string', enum: ['low', 'high'] });
    expect(value(plain, '2')).toBe('high');
    expect(value(plain, 'LOW')).toBe('low');
    expect(reason(plain, 'medium')).toBe('expected one of 1) low, 2) high');
    const titled = field({
      type: 'string',
      oneOf: [
        { const: 'p1', title: 'Urgent' },
        { const: 'p2', title: 'Normal' },
      ],
    });
    expect(choicesOf(titled.schema)).toEqual([
      { value: 'p1', label: 'Urgent' },
      { value: 'p2', label: 'Normal' },
    ]);
    expect(value(titled, 'normal')).toBe('p2');
    expect(value(titled, '1')).toBe('p1');
    const legacy = field({ type: 'string', enum: ['a', 'b'], enumNames: ['Alpha', 'Beta'] });
    expect(value(legacy, 'beta')).toBe('b');
  });

  it('reads multi-select answers as comma-separated numbers or values, within minItems/maxItems', () => {
    const multi = field({
      type: 'array',
      items: { type: 'string', enum: ['eu', 'us', 'ap'] },
      minItems: 1,
      maxItems: 2,
    });
    expect(value(multi, '1, ap')).toEqual(['eu', 'ap']);
    expect(value(multi, 'us,us')).toEqual(['us']);
    expect(reason(multi, 'eu,us,ap')).toBe('choose at most 2 options');
    expect(reason(multi, 'mars')).toBe('"mars" is not one of 1) eu, 2) us, 3) ap');
    const titled = field({ type: 'array', items: { anyOf: [{ const: 'x', title: 'Ex' }] }, minItems: 1 });
    expect(value(titled, 'ex')).toEqual(['x']);
    expect(reason(titled, ' , ')).toBe('choose at least 1 option');
  });

  it('treats empty input as the default, a skip for an optional field, or missing for a required one', () => {
    expect(value(field({ type: 'integer', default: 3 }), '')).toBe(3);
    expect(parseAnswer(field({ type: 'string' }, false), '  ')).toEqual({ ok: true, skip: true });
    expect(reason(field({ type: 'string' }, true, 'ticket'), '')).toBe('ticket is required');
  });

  it('describes each field in its prompt: description, hint, options, default', () => {
    expect(promptFor(field({ type: 'boolean', description: 'Deploy now?' }, true, 'confirm')).prompt).toBe(
      '  confirm - Deploy now? [yes/no, required]: ',
    );
    const choice = promptFor(
      field({ type: 'string', title: 'Level', enum: ['low', 'high'], default: 'low' }, false, 'lvl'),
    );
    expect(choice.lines).toEqual(['    1) low  2) high']);
    expect(choice.prompt).toBe('  lvl (Level) [1-2 or a value, optional] (Enter for low): ');
    expect(promptFor(field({ type: 'integer', minimum: 1, maximum: 5 }, true, 'n')).prompt).toBe(
      '  n [whole number, >= 1, <= 5, required]: ',
    );
    expect(fieldsOf({ properties: { a: { type: 'string' }, b: { type: 'boolean' } }, required: ['b'] })).toEqual([
      { name: 'a', schema: { type: 'string' }, required: false },
      { name: 'b', schema: { type: 'boolean' }, required: true },
    ]);
  });

  it('asks field by field, re-prompts with the reason, and honours :decline and :cancel', async () => {
    const script = (answers: string[]) => {
      const said: string[] = [];
      const asked: string[] = [];
      return {
        said,
        asked,
        io: {
          say: (line: string) => said.push(line),
          ask: async (prompt: string) => {
            asked.push(prompt);
            const next = answers.shift();
            if (next === undefined) throw new Error('script ran out of answers');
            return next;
          },
        },
      };
    };
    const schema = {
      type: 'object',
      properties: {
        approve: { type: 'boolean' },
        comment: { type: 'string' },
        count: { type: 'integer', default: 2 },
      },
      required: ['approve'],
    };
    const run = script(['perhaps', 'yes', '', '']);
    expect(await askForm(schema, run.io)).toEqual({ action: 'accept', content: { approve: true, count: 2 } });
    expect(run.said).toContain('  ! expected yes or no');
    expect(run.asked.filter((p) => p.includes('approve'))).toHaveLength(2);
    expect(run.said[0]).toMatch(/:decline declines the form, :cancel cancels it/);
    expect(await askForm(schema, script([':decline']).io)).toEqual({ action: 'decline' });
    expect(await askForm(schema, script(['yes', ' :Cancel ']).io)).toEqual({ action: 'cancel' });
  });
});

describe('baton call: arguments and output', () => {
  it('splits a --stdio command like a shell, without expansion', () => {
    expect(splitCommand(`baton serve "./my flows.ts" --stdio`)).toEqual(['baton', 'serve', './my flows.ts', '--stdio']);
    expect(splitCommand(`node -e 'console.log("$HOME")' a\\ b ""`)).toEqual([
      'node',
      '-e',
      'console.log("$HOME")',
      'a b',
      '',
    ]);
    expect(() => splitCommand(`node "oops`)).toThrow(/unclosed " quote/);
  });

  it('parses the flags', () => {
    expect(parseCallArgs(['t', '--http', 'http://h:1/mcp', '--token', 'k', '--args', '{"a":1}'], {})).toEqual({
      tool: 't',
      args: { a: 1 },
      http: new URL('http://h:1/mcp'),
      token: 'k',
      tokenSource: { kind: 'flag' },
    });
    expect(parseCallArgs(['t', '--stdio', 'srv --x'])).toEqual({ tool: 't', args: {}, stdio: ['srv', '--x'] });
    expect(parseCallArgs(['--list', '--http', 'http://h:1/mcp'], {})).toEqual({
      args: {},
      list: true,
      http: new URL('http://h:1/mcp'),
    });
  });

  it('reads the token from --token-file or $BATON_TOKEN, and says where it came from', () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-call-token-'));
    const file = join(dir, 'alice.token');
    writeFileSync(file, '  secret-from-file  \n');
    try {
      expect(parseCallArgs(['t', '--http', 'http://h:1/mcp', '--token-file', file], {})).toMatchObject({
        token: 'secret-from-file',
        tokenSource: { kind: 'file', path: file },
      });
      expect(parseCallArgs(['t', '--http', 'http://h:1/mcp'], { BATON_TOKEN: 'secret-from-env' })).toMatchObject({
        token: 'secret-from-env',
        tokenSource: { kind: 'env' },
      });
      // A flag wins over the environment; --oauth and --stdio do not read it.
      expect(
        parseCallArgs(['t', '--http', 'http://h:1/mcp', '--token-file', file], { BATON_TOKEN: 'e' }),
      ).toMatchObject({
        token: 'secret-from-file',
      });
      expect(parseCallArgs(['t', '--http', 'http://h:1/mcp', '--oauth'], { BATON_TOKEN: 'e' })).not.toHaveProperty(
        'token',
      );
      expect(parseCallArgs(['t', '--stdio', 'srv'], { BATON_TOKEN: 'e' })).not.toHaveProperty('token');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('prints text blocks, else the structured content', () => {
    expect(
      resultText({
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      }),
    ).toBe('a\nb');
    expect(resultText({ content: [], structuredContent: { ok: true } })).toBe('{\n  "ok": true\n}');
  });

  it('prints a waiting result as who it waits for, the request id and how to continue', () => {
    const waiting = { status: 'waiting', id: 'R7', waitingFor: [{ key: 'manager_approval', role: 'manager' }] };
    const url = new URL('http://127.0.0.1:8080/mcp');
    // In the repository the CLI runs from its sources: the hint is the repository's command, with
    // the transport flags this call used (quoted for a POSIX shell), and never the token itself.
    const file = { http: url, token: 'secret', tokenSource: { kind: 'file', path: "alice's token" } } as const;
    expect(waitingLine({ structuredContent: waiting }, file)).toBe(
      `waiting for manager_approval (role manager) on request R7; continue with pnpm -s baton call baton_resume --args '{"id":"R7"}' --http http://127.0.0.1:8080/mcp --token-file 'alice'\\''s token'`,
    );
    const env = { http: url, token: 'secret', tokenSource: { kind: 'env' } } as const;
    expect(waitingLine({ structuredContent: waiting }, env)).toBe(
      `waiting for manager_approval (role manager) on request R7; continue with pnpm -s baton call baton_resume --args '{"id":"R7"}' --http http://127.0.0.1:8080/mcp`,
    );
    const flag = { http: url, token: 'secret', tokenSource: { kind: 'flag' } } as const;
    expect(waitingLine({ structuredContent: waiting }, flag)).toBe(
      `waiting for manager_approval (role manager) on request R7; continue with pnpm -s baton call baton_resume --args '{"id":"R7"}' --http http://127.0.0.1:8080/mcp ${TOKEN_AGAIN}`,
    );
    expect(
      waitingLine(
        { structuredContent: { ...waiting, waitingFor: [{ key: 'a' }, { key: 'b', role: 'x' }] } },
        { stdio: ['pnpm', '-s', 'baton', 'serve', './my flows.ts', '--stdio'] },
      ),
    ).toBe(
      `waiting for a and b (role x) on request R7; continue with pnpm -s baton call baton_resume --args '{"id":"R7"}' --stdio 'pnpm -s baton serve '\\''./my flows.ts'\\'' --stdio'`,
    );
    expect(waitingLine({ structuredContent: { status: 'completed', id: 'R7' } })).toBeUndefined();
    expect(waitingLine({})).toBeUndefined();
  });
});

function expectOneLine(result: { code: number | null; stderr: string }, code: number, pattern: RegExp) {
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines, result.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^baton: /);
  expect(lines[0]).toMatch(pattern);
  expect(result.code).toBe(code);
}

describe.concurrent('baton call: usage errors, one line, exit 2', () => {
  it.each([
    [['call'], /missing <tool> \(or --list\)/],
    [['call', 't'], /exactly one of --http URL or --stdio/],
    [['call', 't', '--http', 'http://127.0.0.1:1/mcp', '--stdio', 'x'], /exactly one of --http URL or --stdio/],
    [['call', 't', '--args', '[1,2]', '--http', 'http://127.0.0.1:1/mcp'], /--args must be a JSON object/],
    [['call', 't', '--args', '"str"', '--http', 'http://127.0.0.1:1/mcp'], /--args must be a JSON object/],
    [['call', 't', '--args', '{nope', '--http', 'http://127.0.0.1:1/mcp'], /--args is not valid JSON/],
    [['call', 't', '--http', 'not a url'], /--http expects a URL/],
    [['call', 't', '--http', 'ftp://h/mcp'], /--http expects an http: or https: URL/],
    [['call', 't', '--stdio', 'srv', '--token', 'k'], /--token applies to --http only/],
    [['call', 't', '--stdio', 'srv', '--token-file', 'f'], /--token-file applies to --http only/],
    [
      ['call', 't', '--http', 'http://h:1/mcp', '--token', 'k', '--token-file', 'f'],
      /give --token or --token-file, not both/,
    ],
    [
      ['call', 't', '--http', 'http://h:1/mcp', '--token-file', '/nonexistent/token'],
      /cannot read --token-file \/nonexistent\/token: ENOENT/,
    ],
    [
      ['call', 't', '--http', 'http://h:1/mcp', '--token-file', 'f', '--oauth'],
      /give --token-file or --oauth, not both/,
    ],
    [['call', 't', '--list', '--http', 'http://h:1/mcp'], /give a <tool> or --list, not both/],
    [['call', 't', '--stdio', '  '], /--stdio needs a command/],
    [['call', 't', '--bogus', '--http', 'http://127.0.0.1:1/mcp'], /unknown option --bogus/],
    [['call', 't', '--http'], /--http needs a value/],
  ])('%j', async (args, pattern) => {
    expectOneLine(await runCli(args), 2, pattern);
  });
});

describe('baton call: a server that cannot be reached', () => {
  it('says so in one line, with what to do (exit 1)', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as { port: number }).port;
    await new Promise((resolve) => probe.close(resolve)); // nothing listens there now
    const url = `http://127.0.0.1:${port}/mcp`;
    expectOneLine(
      await runCli(['call', 'deploy_production', '--args', '{"version":"1.0.0"}', '--http', url]),
      1,
      new RegExp(
        `^baton: cannot reach ${url.replaceAll('.', '\\.')} \\(connection refused\\): is the server running\\?$`,
      ),
    );
  });
});

// ---------------------------------------------------------------- tmux

const HAS_TMUX = spawnSync('tmux', ['-V']).status === 0;
const IN_CI = process.env.CI === 'true';
/** A private tmux server (its own socket in a temporary folder), killed and removed in afterAll. */
const SOCKET_DIR = mkdtempSync(join(tmpdir(), 'baton-call-tmux-'));
const SOCKET = join(SOCKET_DIR, 'tmux.sock');
const SESSIONS: string[] = [];

if (!HAS_TMUX && !IN_CI) {
  console.warn('skipping the baton call terminal tests: tmux is not installed (apt-get install -y tmux)');
}

function tmux(...args: string[]): string {
  return execFileSync('tmux', ['-S', SOCKET, ...args], { encoding: 'utf8' });
}

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** Start `baton call ...` in a fresh detached session; the exit status lands on screen as EXIT:<code>. */
function startCall(name: string, args: string[]): string {
  const session = `${name}-${SESSIONS.length}`;
  SESSIONS.push(session);
  const command = [process.execPath, '--import', 'tsx', CLI, 'call', ...args].map(shellQuote).join(' ');
  tmux('new-session', '-d', '-s', session, '-x', '160', '-y', '50', '-c', ROOT, `${command}; echo EXIT:$?; sleep 600`);
  return session;
}

function screen(session: string): string {
  return tmux('capture-pane', '-p', '-J', '-t', session, '-S', '-500');
}

/** Poll the screen until `ready` holds (bounded: 45 s, for a busy machine; the test times out at 60 s). */
async function waitFor(session: string, ready: (text: string) => boolean, what: string): Promise<string> {
  const deadline = Date.now() + 45_000;
  for (;;) {
    const text = screen(session);
    if (ready(text)) return text;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; screen:\n${text}`);
    await sleep(100);
  }
}

const count = (text: string, needle: string) => text.split(needle).length - 1;

function type(session: string, line: string): void {
  tmux('send-keys', '-t', session, '-l', line);
  tmux('send-keys', '-t', session, 'Enter');
}

const exitOf = (text: string) => Number(/^EXIT:(\d+)$/m.exec(text)?.[1]);

describe('baton call through tmux', () => {
  let serve: ServeProcess | undefined;

  beforeAll(async () => {
    serve = await startServe(['examples/approvals', '--http', '127.0.0.1:0']);
  });
  afterAll(async () => {
    if (HAS_TMUX) spawnSync('tmux', ['-S', SOCKET, 'kill-server']);
    rmSync(SOCKET_DIR, { recursive: true, force: true });
    await serve?.stop();
  });

  it.runIf(!HAS_TMUX && IN_CI)('needs tmux when CI=true', () => {
    throw new Error('tmux is not installed: add "apt-get install -y tmux" to scripts/test.sh');
  });

  it.skipIf(!HAS_TMUX)('deploys after a re-prompted invalid answer and a ticket', async () => {
    const session = startCall('deploy', [
      'deploy_production',
      '--args',
      '{"version":"3.1.0"}',
      '--http',
      serve!.url.href,
    ]);
    const confirm = '  confirm - Deploy now? [yes/no, required]: ';
    let text = await waitFor(session, (t) => t.includes(confirm), 'the confirm prompt');
    expect(text).toContain('-- round 1: the server needs input --');
    expect(text).toContain('? Deploy 3.1.0 to production? Plan: rolling update of 3 instances to 3.1.0.');
    expect(text).toContain(':decline declines the form, :cancel cancels it');

    type(session, 'maybe');
    text = await waitFor(session, (t) => count(t, confirm) === 2, 'the confirm prompt again');
    expect(text).toContain('  ! expected yes or no');

    type(session, 'y');
    const ticket = '  ticket - Change ticket, e.g. CHG-1234 [at most 64 characters, required]: ';
    text = await waitFor(session, (t) => t.includes(ticket), 'the ticket prompt');
    expect(text).toContain('  -> accept {"confirm":true}');
    expect(text).toContain('? Which change ticket covers this deployment?');

    type(session, 'CHG-42');
    text = await waitFor(session, (t) => /^EXIT:\d+$/m.test(t), 'the exit status');
    expect(text).toContain('Deployed 3.1.0 to production (change ticket CHG-42).');
    expect(exitOf(text)).toBe(0);
  });

  it.skipIf(!HAS_TMUX)('stops asking a round once its confirmation is declined: the ticket is not asked', async () => {
    const session = startCall('decline', [
      'deploy_production',
      '--args',
      '{"version":"3.2.0"}',
      '--http',
      serve!.url.href,
    ]);
    await waitFor(session, (t) => t.includes('  confirm - Deploy now? [yes/no, required]: '), 'the confirm prompt');
    type(session, ':decline');
    const text = await waitFor(session, (t) => /^EXIT:\d+$/m.test(t), 'the exit status');
    expect(text).toContain('  -> decline');
    expect(text).toContain('? Which change ticket covers this deployment?');
    expect(text).toContain('  -> cancel (not asked: an earlier answer of this round was declined or cancelled)');
    expect(text).not.toContain('  ticket - Change ticket');
    expect(text).toContain('Deployment of 3.2.0 cancelled.');
    expect(exitOf(text)).toBe(0);
  });

  it.skipIf(!HAS_TMUX)('Ctrl-C at a prompt: one line saying the flow was not completed, exit 130', async () => {
    const session = startCall('interrupt', [
      'deploy_production',
      '--args',
      '{"version":"3.3.0"}',
      '--http',
      serve!.url.href,
    ]);
    await waitFor(session, (t) => t.includes('  confirm - Deploy now? [yes/no, required]: '), 'the confirm prompt');
    tmux('send-keys', '-t', session, 'C-c');
    const text = await waitFor(session, (t) => /^EXIT:\d+$/m.test(t), 'the exit status');
    expect(text).toMatch(/^baton: cancelled \(Ctrl-C\); the flow was not completed$/m);
    expect(exitOf(text)).toBe(130);
  });

  it.skipIf(!HAS_TMUX)('a server that goes down mid-flow: one line saying so and what to do, exit 1', async () => {
    const doomed = await startServe(['examples/approvals', '--http', '127.0.0.1:0']);
    try {
      const session = startCall('down', [
        'deploy_production',
        '--args',
        '{"version":"3.4.0"}',
        '--http',
        doomed.url.href,
      ]);
      await waitFor(session, (t) => t.includes('  confirm - Deploy now? [yes/no, required]: '), 'the confirm prompt');
      await doomed.stop();
      type(session, 'y');
      await waitFor(
        session,
        (t) => t.includes('  ticket - Change ticket, e.g. CHG-1234 [at most 64 characters, required]: '),
        'the ticket',
      );
      type(session, 'CHG-9');
      const text = await waitFor(session, (t) => /^EXIT:\d+$/m.test(t), 'the exit status');
      const errors = text.split('\n').filter((line) => line.startsWith('baton: '));
      expect(errors).toEqual([
        `baton: lost ${doomed.url.href} during deploy_production (connection refused): is the server still running? The flow was not completed; call again to start over`,
      ]);
      expect(exitOf(text)).toBe(1);
    } finally {
      await doomed.stop();
    }
  });

  it.skipIf(!HAS_TMUX)('two people: the manager declines an expense through baton call baton_decide', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-call-decide-'));
    const alice = `alice-${'a'.repeat(20)}`;
    const bob = `bob-${'b'.repeat(20)}`;
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ [alice]: 'alice', [bob]: { principal: 'bob', roles: ['manager'] } }));
    const served = await startServe([
      'examples/approvals',
      '--http',
      '127.0.0.1:0',
      '--ledger',
      `sqlite:${join(dir, 'ledger.db')}`,
      '--auth-tokens',
      tokens,
      '--wait-in-call',
      '1',
    ]);
    const as = (token: string, tool: string, args?: object) => [
      'call',
      tool,
      ...(args ? ['--args', JSON.stringify(args)] : []),
      '--http',
      served.url.href,
      '--token',
      token,
    ];
    try {
      // Alice requests: her call ends with the waiting line (exit 0).
      const requested = await runCli(as(alice, 'expense_approval', { amount: 120, purpose: 'books' }));
      expect(requested.code, requested.stderr).toBe(0);
      const line =
        /^waiting for manager_approval \(role manager\) on request ([\w-]{22}); continue with pnpm -s baton call baton_resume --args '\{"id":"([\w-]{22})"\}' --http \S+ \(as the same person: add --token-file FILE or set BATON_TOKEN\)$/m.exec(
          requested.stdout,
        );
      expect(line, requested.stdout).not.toBeNull();
      expect(requested.stdout + requested.stderr).not.toContain(alice);
      const id = line![1]!;
      expect(line![2]).toBe(id);
      expect(requested.stderr).toContain("-- waiting for someone else's decision --");
      // She may not decide it herself; bob finds it in his inbox.
      const own = await runCli(as(alice, 'baton_decide', { id }));
      expect(own.code).toBe(1);
      expect(own.stdout).toMatch(/four eyes/);
      const inbox = await runCli(as(bob, 'baton_inbox'));
      expect(inbox.code).toBe(0);
      expect(inbox.stdout).toContain(id);
      // Bob decides at the terminal: the decision's form is prompted like any form.
      const session = startCall('decide', as(bob, 'baton_decide', { id }).slice(1));
      const approve = '  approve - Approve? [yes/no, required]: ';
      let text = await waitFor(session, (t) => t.includes(approve), 'the approve prompt');
      expect(text).toContain('? Approve an expense of 120 for "books"?');
      type(session, 'n');
      const comment = '  comment - Comment (optional) [at most 500 characters, optional]: ';
      text = await waitFor(session, (t) => t.includes(comment), 'the comment prompt');
      type(session, 'not this quarter');
      text = await waitFor(session, (t) => /^EXIT:\d+$/m.test(t), 'the exit status');
      expect(text).toContain('  -> accept {"approve":false,"comment":"not this quarter"}');
      expect(text).toMatch(/Recorded manager_approval on request [\w-]{22} \(expense_approval\)/);
      expect(exitOf(text)).toBe(0);
      // Alice continues: the flow took the manager's rejection.
      const resumed = await runCli(as(alice, 'baton_resume', { id }));
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(resumed.stdout.trim()).toBe('Expense of 120 rejected by manager.');
      const again = await runCli(as(bob, 'baton_decide', { id }));
      expect(again.code).toBe(1);
      expect(again.stdout).toMatch(/has ended/);
    } finally {
      await served.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('--list prints the tools as the server lists them, JSON on stdout (exit 0)', async () => {
    const listed = await runCli(['call', '--list', '--http', serve!.url.href]);
    expect(listed.code, listed.stderr).toBe(0);
    const tools = JSON.parse(listed.stdout) as { name: string; inputSchema: { properties?: object } }[];
    expect(tools.map((t) => t.name).sort()).toEqual(['deploy_production', 'draft_release_notes']);
    expect(tools.find((t) => t.name === 'deploy_production')!.inputSchema.properties).toHaveProperty('version');
  });

  it('prints an error result (exit 1) and a JSON-RPC error as one line (exit 1)', async () => {
    const invalid = await runCli(['call', 'deploy_production', '--args', '{}', '--http', serve!.url.href]);
    expect(invalid.code).toBe(1);
    expect(invalid.stdout).toMatch(/Invalid arguments/);
    expect(invalid.stderr).toContain('-- deploy_production returned an error --');
    const unknown = await runCli(['call', 'no_such_tool', '--http', serve!.url.href]);
    expect(unknown.code).toBe(1);
    const errors = unknown.stderr.split('\n').filter((line) => line.startsWith('baton: '));
    expect(errors, unknown.stderr).toEqual([
      `baton: ${serve!.url.href} has no tool "no_such_tool" (tools: deploy_production, draft_release_notes)`,
    ]);
    expect(unknown.stderr).not.toMatch(/\bat .+:\d+:\d+/);
  });
});

// ---------------------------------------------------------------- first-hour mistakes

describe('baton call: the mistakes of a first hour say what to do next', () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-call-firsthour-'));
  const alice = `alice-${'a'.repeat(20)}`;
  const bob = `bob-${'b'.repeat(20)}`;
  let served: ServeProcess | undefined;
  const as = (token: string | undefined, tool: string, args?: object, url = served!.url.href) => [
    'call',
    tool,
    ...(args ? ['--args', JSON.stringify(args)] : []),
    '--http',
    url,
    ...(token ? ['--token', token] : []),
  ];

  beforeAll(async () => {
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ [alice]: 'alice', [bob]: { principal: 'bob', roles: ['manager'] } }));
    // --wait-in-call 8: a round is held at most 7 s, so the call gets one "retry later" round.
    served = await startServe([
      'examples/approvals',
      '--http',
      '127.0.0.1:0',
      '--ledger',
      `sqlite:${join(dir, 'ledger.db')}`,
      '--auth-tokens',
      tokens,
      '--wait-in-call',
      '8',
    ]);
  });
  afterAll(async () => {
    await served?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it.concurrent('no token, and a token the server refuses, in the server own words (exit 1)', async () => {
    const [none, wrong] = await Promise.all([
      runCli(as(undefined, 'deploy_production', { version: '1.0.0' })),
      runCli(as('not-a-known-token-at-all', 'deploy_production', { version: '1.0.0' })),
    ]);
    expectOneLine(
      none,
      1,
      /^baton: this server needs a token: pass --token-file FILE \(or set BATON_TOKEN\) \(HTTP 401\)$/,
    );
    expectOneLine(wrong, 1, /^baton: the server refused the token: Unknown bearer token \(HTTP 401\)$/);
  });

  it.concurrent('a URL without /mcp: the endpoint to use instead, not raw JSON-RPC (exit 1)', async () => {
    const root = new URL('/', served!.url).href;
    const result = await runCli(as(alice, 'deploy_production', { version: '1.0.0' }, root));
    expectOneLine(
      result,
      1,
      new RegExp(
        `^baton: nothing answers MCP at ${root} \\(HTTP 404\\): baton serve answers at /mcp, try --http ${served!.url.href}$`,
      ),
    );
    expect(result.stderr).not.toContain('jsonrpc');
  });

  it.concurrent('an unknown tool: the tools there are, and the near miss (exit 1)', async () => {
    const result = await runCli(as(alice, 'expense_aproval', { amount: 1 }));
    expectOneLine(
      result,
      1,
      /^baton: \S+ has no tool "expense_aproval": did you mean expense_approval\? \(tools: .*\)$/,
    );
    expect(result.stderr).toContain('baton_inbox');
  });

  it.concurrent('an argument the flow does not declare: refused with its arguments, described (exit 2)', async () => {
    const result = await runCli(as(alice, 'deploy_production', { verison: '1.0.0' }));
    expectOneLine(
      result,
      2,
      /^baton: deploy_production has no argument "verison": did you mean version\? \(deploy_production takes version \(The version to deploy\), commit \(The commit to deploy: when given, wait up to 30 minutes for CI to report it green first\)\); fix --args$/,
    );
  });

  it('a retry-later round prints "waiting for", and the closing hint works as printed, naming the token file', async () => {
    const tokenFile = join(dir, 'alice.token');
    writeFileSync(tokenFile, `${alice}\n`, { mode: 0o600 });
    const requested = await runCli([
      'call',
      'expense_approval',
      '--args',
      '{"amount":75,"purpose":"a course"}',
      '--http',
      served!.url.href,
      '--token-file',
      tokenFile,
    ]);
    expect(requested.code, requested.stderr).toBe(0);
    expect(requested.stdout + requested.stderr).not.toContain(alice);
    expect(requested.stderr).toContain(`-- round 1: ${WAITING_ROUND} --`);
    expect(requested.stderr).not.toContain('the server needs input');
    const hint = /; continue with (.+)$/m.exec(requested.stdout)?.[1];
    expect(hint, requested.stdout).toBeDefined();
    const id = /on request ([\w-]{22});/.exec(requested.stdout)![1]!;
    expect(hint).toBe(
      `pnpm -s baton call baton_resume --args '{"id":"${id}"}' --http ${served!.url.href} --token-file ${tokenFile}`,
    );
    // Bob approves, his answers piped on stdin (approve, no comment).
    const decided = await runCli(as(bob, 'baton_decide', { id }), {}, 'y\n\n');
    expect(decided.code, decided.stderr).toBe(0);
    expect(decided.stdout).toMatch(/^Recorded manager_approval/);
    // The hint, run by a shell exactly as printed (the repository's `pnpm -s baton`).
    const resumed = spawnSync('sh', ['-c', hint!], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(resumed.stdout.trim()).toBe('Expense of 75 approved.');
  }, 60_000);

  it('with $BATON_TOKEN the hint holds no token and works as printed, the variable still set', async () => {
    const env = { BATON_TOKEN: alice };
    const requested = await runCli(as(undefined, 'expense_approval', { amount: 76, purpose: 'a book' }), env);
    expect(requested.code, requested.stderr).toBe(0);
    expect(requested.stdout + requested.stderr).not.toContain(alice);
    const hint = /; continue with (.+)$/m.exec(requested.stdout)?.[1];
    const id = /on request ([\w-]{22});/.exec(requested.stdout)![1]!;
    expect(hint).toBe(`pnpm -s baton call baton_resume --args '{"id":"${id}"}' --http ${served!.url.href}`);
    const resumed = spawnSync('sh', ['-c', hint!], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, ...env },
    });
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/waiting for manager_approval/);
  }, 60_000);
});
