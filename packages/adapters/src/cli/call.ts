/**
 * `baton call (<tool> [--args JSON] | --list) (--http URL [--token-file FILE | --token TOKEN | --oauth] | --stdio "COMMAND")`:
 * a terminal client for trying a flow by hand. It calls the tool with the
 * official SDK client (protocol 2026-07-28, rounds driven automatically) and
 * answers what the server asks at the terminal: a form elicitation becomes
 * one prompt per field, checked against the schema (see `formPrompt.ts`); a
 * URL elicitation prints the URL and waits for Enter; sampling asks the
 * human to type the model's reply or accept a suggested one; roots are the
 * current folder. The conversation is written on stderr and the tool's
 * result text on stdout, so `baton call ... > out.txt` keeps only the
 * result. A flow waiting for someone else's decision (`structuredContent.status`
 * `waiting`) prints who it waits for, the request id and the `baton_resume`
 * command to continue (never with the token in it); the decision tools are
 * called like any tool, as the person the token names (`--token-file`,
 * `$BATON_TOKEN` or `--token`): `baton_inbox`, `baton_decide --args '{"id":…}'`
 * (whose form is prompted like any form), `baton_resume`. `--list` prints the
 * server's tools instead. Exit 0 for a result, 1 for an error result, a JSON-RPC error or
 * a transport failure (one line saying what happened and what to do: the
 * server cannot be reached, or went away mid-flow), 2 for bad flags, 130 for
 * Ctrl-C (with a line saying the flow was not completed). Once a form of a
 * round is declined or cancelled, the round's other forms are not asked (a
 * flow that was told "no" has no use for the rest): they are sent as
 * cancelled.
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import {
  type CallToolResult,
  Client,
  ProtocolError,
  StreamableHTTPClientTransport,
  UnauthorizedError,
} from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { CliError, EXIT_FAILURE, oneLine, usageError } from './cliError.js';
import { followTask, type InputAnswers } from './followTask.js';
import { askForm, CANCEL, DECLINE, type PromptIO, type RequestedSchema } from './formPrompt.js';
import { type CallAuth, createCallAuth, OAUTH_CALL_OPTIONS, type OAuthCallFlags } from './oauthLogin.js';
import { parseFlags } from './parseFlags.js';
import { withDefaultResultType } from './resultTypeDefault.js';
import { runAs } from './runAs.js';
import { checkToolCall, listAllTools } from './toolCheck.js';

/** The command's synopsis, as `--help`, usage errors and the README show it. */
export const USAGE =
  'baton call (<tool> [--args JSON] | --list) (--http URL [--token-file FILE | --token TOKEN | --oauth [--client-id ID [--client-secret-file FILE]]] [--follow] | --stdio "COMMAND")';

/** The environment variable that holds the bearer token when neither --token nor --token-file is given. */
export const TOKEN_ENV = 'BATON_TOKEN';

const help = () => `usage: ${USAGE}

Call a tool and answer what it asks at the terminal (forms field by field, URLs, sampling; roots are the current folder).

  --args JSON          the tool's arguments, a JSON object (default {})
  --list               print the server's tools (name, description, input schema as listed) as a
                       JSON array on stdout, instead of calling one
  --http URL           a Streamable HTTP server, e.g. http://127.0.0.1:8080/mcp
  --token-file FILE    a file holding the bearer token sent with every HTTP request
  --token TOKEN        the bearer token itself (visible to other local users in the process list:
                       prefer --token-file or $${TOKEN_ENV}); without either, $${TOKEN_ENV} is used when set
  --oauth              sign in with the server's identity provider (found from its 401): with
                       --client-id and --client-secret-file by client credentials, else in the
                       browser (authorization code with PKCE; the URL is printed when no browser
                       opens); tokens are cached in $XDG_CONFIG_HOME/baton/oauth.json (or
                       ~/.config/baton), mode 0600
  --client-id ID       the OAuth client id (without it, the browser sign-in registers one); an
                       https: URL is a Client ID Metadata Document, used where the provider takes one
  --client-secret-file FILE
                       a file holding the client secret: client credentials, no browser
  --follow             follow the call's task to its end (tasks extension, --http only): a status
                       line while it waits, its questions prompted; Ctrl-C stops following
  --stdio "COMMAND"    a stdio server to start, e.g. "${runAs()} serve ./flows.ts --stdio"

At any prompt ${DECLINE} declines and ${CANCEL} cancels the current request (the round's other
forms are then not asked: they are sent as cancelled); Ctrl-C stops (exit 130).
The result text goes to stdout; exit 1 when the tool returns an error or the server cannot be reached.

Approvals by someone else: call as the requester or as a decider (the token picks who you are):
  baton call baton_inbox --http URL --token-file FILE                       decisions you may make
  baton call baton_decide --args '{"id":"ID"}' --http URL --token-file FILE  answer one (its form is prompted)
  baton call baton_resume --args '{"id":"ID"}' --http URL --token-file FILE  continue your waiting request
A waiting call prints the command to continue with; it names the token's file or $${TOKEN_ENV}, never the token.
`;

/** The reply offered for a sampling request (Enter accepts it). */
export const SUGGESTED_REPLY = 'OK.';

/** Parsed and checked `call` options. */
export interface CallOptions {
  /** The tool to call; `undefined` with `--list`. */
  readonly tool?: string;
  readonly args: Record<string, unknown>;
  /** `--list`: print the server's tools instead of calling one. */
  readonly list?: boolean;
  readonly http?: URL;
  /** The bearer token: `--token`, the content of `--token-file`, or `$BATON_TOKEN`. */
  readonly token?: string;
  /** Where the token came from, so a printed hint can name it without repeating it. */
  readonly tokenSource?: TokenSource;
  /** `--oauth`: sign in through the server's identity provider. */
  readonly oauth?: OAuthCallFlags;
  readonly stdio?: readonly string[];
  /** `--follow`: follow the call's task (see `followTask.ts`). */
  readonly follow?: boolean;
}

/** Where the bearer token came from: the command line, a file (its path as given), or `$BATON_TOKEN`. */
export type TokenSource =
  | { readonly kind: 'flag' }
  | { readonly kind: 'file'; readonly path: string }
  | { readonly kind: 'env' };

/**
 * Split a command line into words: whitespace separates, single quotes keep
 * everything, double quotes keep everything but `\"` and `\\`, a backslash
 * outside quotes escapes the next character. No variables, globs or pipes.
 */
export function splitCommand(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (quote === "'") {
      if (ch === "'") quote = undefined;
      else word += ch;
    } else if (quote === '"') {
      if (ch === '"') quote = undefined;
      else if (ch === '\\' && (line[i + 1] === '"' || line[i + 1] === '\\')) word += line[++i];
      else word += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      inWord = true;
    } else if (ch === '\\' && i + 1 < line.length) {
      word += line[++i];
      inWord = true;
    } else if (/\s/.test(ch)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += ch;
      inWord = true;
    }
  }
  if (quote) throw usageError(`--stdio command has an unclosed ${quote} quote`, USAGE);
  if (inWord) words.push(word);
  return words;
}

/** The flags the command parses (node:util `parseArgs` options); the README documents each. */
export const OPTIONS = {
  args: { type: 'string' },
  http: { type: 'string' },
  list: { type: 'boolean' },
  token: { type: 'string' },
  'token-file': { type: 'string' },
  ...OAUTH_CALL_OPTIONS,
  stdio: { type: 'string' },
  follow: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/**
 * The bearer token of a call and where it came from: `--token`, else the first line of
 * `--token-file` (surrounding whitespace trimmed), else `$BATON_TOKEN` (HTTP only).
 */
function readToken(
  values: { token?: string; 'token-file'?: string; oauth?: boolean },
  http: boolean,
  env: NodeJS.ProcessEnv,
): { token?: string; tokenSource?: TokenSource } {
  if (values.token !== undefined && values['token-file'] !== undefined) {
    throw usageError('give --token or --token-file, not both', USAGE);
  }
  if (values.token !== undefined) return { token: values.token, tokenSource: { kind: 'flag' } };
  const path = values['token-file'];
  if (path !== undefined) {
    let token: string;
    try {
      token = readFileSync(path, 'utf8').trim();
    } catch (error) {
      throw usageError(
        `cannot read --token-file ${path}: ${(error as NodeJS.ErrnoException).code ?? oneLine(error)}`,
        USAGE,
      );
    }
    if (token === '') throw usageError(`--token-file ${path} is empty`, USAGE);
    if (/\s/.test(token)) throw usageError(`--token-file ${path} must hold one token on one line`, USAGE);
    return { token, tokenSource: { kind: 'file', path } };
  }
  const fromEnv = env[TOKEN_ENV]?.trim();
  if (http && !values.oauth && fromEnv) return { token: fromEnv, tokenSource: { kind: 'env' } };
  return {};
}

/** Parse and check the flags of `baton call` (`env`: where `$BATON_TOKEN` is read). */
export function parseCallArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): CallOptions | 'help' {
  const { values, positionals } = parseFlags(argv, OPTIONS, USAGE);
  if (values.help) return 'help';
  if (values.list) {
    if (positionals.length > 0) throw usageError('give a <tool> or --list, not both', USAGE);
    if (values.args !== undefined) throw usageError('--args needs a <tool> (--list calls none)', USAGE);
    if (values.follow) throw usageError('--follow needs a <tool> (--list calls none)', USAGE);
  } else if (positionals.length !== 1) {
    throw usageError(positionals.length === 0 ? 'missing <tool> (or --list)' : 'expected one <tool>', USAGE);
  }
  let args: unknown = {};
  if (values.args !== undefined) {
    try {
      args = JSON.parse(values.args);
    } catch (error) {
      throw usageError(`--args is not valid JSON: ${oneLine(error)}`, USAGE);
    }
    if (typeof args !== 'object' || args === null || Array.isArray(args)) {
      throw usageError('--args must be a JSON object, e.g. \'{"version":"1.0.0"}\'', USAGE);
    }
  }
  if ((values.http === undefined) === (values.stdio === undefined)) {
    throw usageError('give exactly one of --http URL or --stdio "COMMAND"', USAGE);
  }
  for (const flag of ['token', 'token-file'] as const) {
    if (values[flag] !== undefined && values.http === undefined) {
      throw usageError(`--${flag} applies to --http only`, USAGE);
    }
    if (values.oauth && values[flag] !== undefined) throw usageError(`give --${flag} or --oauth, not both`, USAGE);
  }
  if (values.oauth && values.http === undefined) throw usageError('--oauth applies to --http only', USAGE);
  if (!values.oauth && (values['client-id'] !== undefined || values['client-secret-file'] !== undefined)) {
    throw usageError(
      `--${values['client-id'] !== undefined ? 'client-id' : 'client-secret-file'} needs --oauth`,
      USAGE,
    );
  }
  if (values['client-secret-file'] !== undefined && values['client-id'] === undefined) {
    throw usageError('--client-secret-file needs --client-id', USAGE);
  }
  const oauth: OAuthCallFlags | undefined = values.oauth
    ? {
        ...(values['client-id'] !== undefined ? { clientId: values['client-id'] } : {}),
        ...(values['client-secret-file'] !== undefined ? { clientSecretFile: values['client-secret-file'] } : {}),
      }
    : undefined;
  if (values.follow && values.http === undefined) {
    throw usageError('--follow applies to --http only', USAGE);
  }
  const base = values.list
    ? { args: {}, list: true }
    : { tool: positionals[0]!, args: args as Record<string, unknown> };
  if (values.http !== undefined) {
    let url: URL;
    try {
      url = new URL(values.http);
    } catch {
      throw usageError(`--http expects a URL such as http://127.0.0.1:8080/mcp, got "${values.http}"`, USAGE);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw usageError(`--http expects an http: or https: URL, got "${values.http}"`, USAGE);
    }
    return {
      ...base,
      http: url,
      ...readToken(values, true, env),
      ...(oauth ? { oauth } : {}),
      ...(values.follow ? { follow: true } : {}),
    };
  }
  const command = splitCommand(values.stdio!);
  if (command.length === 0) throw usageError('--stdio needs a command', USAGE);
  return { ...base, stdio: command };
}

/** The one line and exit code of Ctrl-C. */
export const INTERRUPTED = 'baton: cancelled (Ctrl-C); the flow was not completed';
const EXIT_INTERRUPTED = 130;

function interrupted(): never {
  process.stderr.write(`\n${INTERRUPTED}\n`);
  process.exit(EXIT_INTERRUPTED);
}

/** Line input on stdin, prompts and conversation on stderr; one prompt at a time. */
interface Terminal extends PromptIO {
  /** Run `task` once every earlier task has finished (requests of one round are asked in turn). */
  serial<T>(task: () => Promise<T>): Promise<T>;
  close(): void;
}

function openTerminal(): Terminal {
  const out = process.stderr;
  let rl: Interface | undefined;
  const lines: string[] = [];
  let waiting: { resolve: (line: string) => void; reject: (error: Error) => void } | undefined;
  let closed = false;
  let queue: Promise<unknown> = Promise.resolve();

  const open = (): Interface => {
    if (rl) return rl;
    rl = createInterface({ input: process.stdin, output: out, terminal: Boolean(process.stdin.isTTY) });
    rl.on('line', (line) => {
      if (waiting) {
        const w = waiting;
        waiting = undefined;
        if (!process.stdin.isTTY) out.write(`${line}\n`); // a terminal echoes what is typed; a pipe does not
        w.resolve(line);
      } else lines.push(line);
    });
    rl.on('close', () => {
      closed = true;
      if (waiting) out.write('\n');
      waiting?.reject(new CliError('input ended before the server had its answer'));
      waiting = undefined;
    });
    rl.on('SIGINT', interrupted);
    return rl;
  };

  return {
    say(line) {
      out.write(`${line}\n`);
    },
    ask(prompt) {
      const reader = open();
      if (lines.length > 0) {
        out.write(`${prompt}${lines[0]}\n`);
        return Promise.resolve(lines.shift()!);
      }
      if (closed) return Promise.reject(new CliError('input ended before the server had its answer'));
      reader.setPrompt(prompt);
      reader.prompt();
      return new Promise((resolve, reject) => {
        waiting = { resolve, reject };
      });
    },
    serial(task) {
      const next = queue.then(task, task);
      queue = next.catch(() => {});
      return next;
    },
    close() {
      rl?.close();
    },
  };
}

function indent(text: string, prefix = '    '): string {
  return text
    .split('\n')
    .map((line) => `${prefix}${line}`)
    .join('\n');
}

type ContentBlock = { type: string; text?: string; uri?: string; mimeType?: string };

function contentText(content: unknown): string {
  const blocks = (Array.isArray(content) ? content : content ? [content] : []) as ContentBlock[];
  return blocks
    .map((b) =>
      b.type === 'text' ? (b.text ?? '') : `[${b.type}${b.uri ? ` ${b.uri}` : b.mimeType ? ` ${b.mimeType}` : ''}]`,
    )
    .join('\n');
}

/** The result's text for stdout: its text blocks, else its structured content as JSON. */
export function resultText(result: Pick<CallToolResult, 'content' | 'structuredContent'>): string {
  const text = contentText(result.content);
  if (text !== '') return text;
  return result.structuredContent !== undefined ? JSON.stringify(result.structuredContent, null, 2) : '';
}

/** What a flow waiting for someone else's decision returns as `structuredContent`. */
interface WaitingContent {
  status: 'waiting';
  id: string;
  waitingFor?: { key?: unknown; role?: unknown }[];
}

function isWaiting(content: unknown): content is WaitingContent {
  const c = content as Partial<WaitingContent> | undefined;
  return c?.status === 'waiting' && typeof c.id === 'string';
}

/** A word for a POSIX shell: as it is when it needs no quoting, else in single quotes. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/**
 * The command that calls `tool` with `args` the way this call reached its server, to print as a
 * hint that works when pasted: `npx baton call baton_resume --args '{"id":"R7"}' --http URL
 * --token-file FILE`. It never holds the token (stdout is often a log or a chat): a token read
 * from a file names the file; one from `$BATON_TOKEN` needs nothing (the variable is read again);
 * one given with `--token` is left out, and `waitingLine` says how to pass it again.
 */
export function callCommand(
  options: Pick<CallOptions, 'http' | 'token' | 'tokenSource' | 'stdio' | 'oauth'>,
  tool: string,
  args: object,
): string {
  const words = [runAs(), 'call', tool, '--args', shellWord(JSON.stringify(args))];
  if (options.http) words.push('--http', shellWord(options.http.href));
  const source = options.tokenSource ?? (options.token !== undefined ? { kind: 'flag' } : undefined);
  if (source?.kind === 'file') words.push('--token-file', shellWord(source.path));
  if (options.oauth) {
    words.push('--oauth');
    if (options.oauth.clientId !== undefined) words.push('--client-id', shellWord(options.oauth.clientId));
    if (options.oauth.clientSecretFile !== undefined) {
      words.push('--client-secret-file', shellWord(options.oauth.clientSecretFile));
    }
  }
  if (options.stdio) words.push('--stdio', shellWord(options.stdio.map(shellWord).join(' ')));
  return words.join(' ');
}

/**
 * The readable line of a waiting result, or `undefined` for any other result: for
 * `{ status: 'waiting', id: 'R7', waitingFor: [{ key: 'manager_approval', role: 'manager' }] }`,
 * `waiting for manager_approval (role manager) on request R7; continue with npx baton call baton_resume --args '{"id":"R7"}' --http URL`.
 * @param via how this call reached its server, repeated in the command to continue with.
 */
export function waitingLine(
  result: Pick<CallToolResult, 'structuredContent'>,
  via: Pick<CallOptions, 'http' | 'token' | 'tokenSource' | 'stdio'> = {},
): string | undefined {
  const content = result.structuredContent;
  if (!isWaiting(content)) return undefined;
  const whom = (Array.isArray(content.waitingFor) ? content.waitingFor : [])
    .filter((w) => typeof w?.key === 'string')
    .map((w) => `${w.key}${typeof w.role === 'string' ? ` (role ${w.role})` : ''}`);
  const what = whom.length > 0 ? `waiting for ${whom.join(' and ')}` : 'waiting';
  const again = via.tokenSource?.kind === 'flag' ? ` ${TOKEN_AGAIN}` : '';
  return `${what} on request ${content.id}; continue with ${callCommand(via, 'baton_resume', { id: content.id })}${again}`;
}

/** Said after a hint to continue when the token was given with `--token` (the hint leaves it out). */
export const TOKEN_AGAIN = `(as the same person: add --token-file FILE or set ${TOKEN_ENV})`;

/**
 * Which round the client is answering, whether one of its forms was declined or cancelled, and
 * whether its header was printed (once something of it is asked; a round that asks nothing is
 * the server's "retry later" and prints a waiting line instead).
 */
interface RoundState {
  round: number;
  refused: boolean;
  announced: boolean;
}

/** Print the header of the current round once, before the first thing it asks. */
function announce(term: Terminal, rounds: RoundState): void {
  if (rounds.announced || rounds.round === 0) return;
  rounds.announced = true;
  term.say(`\n-- round ${rounds.round}: the server needs input --`);
}

/** The line of a round that asks nothing: the server holds the call while it waits. */
export const WAITING_ROUND =
  'waiting for the server: a decision by someone else or a step still running (nothing to answer)';

/** What the client declares: every input kind the terminal can answer. */
const CAPABILITIES = { elicitation: { form: {}, url: {} }, sampling: {}, roots: {} };
const CLIENT_INFO = { name: 'baton-call', version: '0.1.0' };

/** How the terminal answers the server's requests: MRTR rounds and followed tasks alike. */
function terminalAnswers(term: Terminal, rounds: RoundState): InputAnswers {
  return {
    elicitation: (raw) =>
      term.serial(async () => {
        announce(term, rounds);
        const params = raw as { mode?: string; message: string; url?: string; requestedSchema?: unknown };
        if (rounds.refused) {
          term.say(`? ${params.message}`);
          term.say('  -> cancel (not asked: an earlier answer of this round was declined or cancelled)');
          return { action: 'cancel' as const };
        }
        const refuse = <T extends { action: 'accept' | 'decline' | 'cancel' }>(outcome: T): T => {
          if (outcome.action !== 'accept') rounds.refused = true;
          return outcome;
        };
        if (params.mode === 'url') {
          term.say(`? The server asks you to open a URL: ${params.message}`);
          term.say(`    ${params.url}`);
          const input = await term.ask(`  Press Enter when done (${DECLINE} declines, ${CANCEL} cancels): `);
          const command = input.trim().toLowerCase();
          const action = command === DECLINE ? 'decline' : command === CANCEL ? 'cancel' : 'accept';
          term.say(`  -> ${action}`);
          return refuse({ action });
        }
        term.say(`? ${params.message}`);
        const outcome = await askForm(params.requestedSchema as RequestedSchema | undefined, term);
        term.say(`  -> ${outcome.action}${outcome.action === 'accept' ? ` ${JSON.stringify(outcome.content)}` : ''}`);
        return refuse(outcome);
      }),
    sampling: (raw) =>
      term.serial(async () => {
        announce(term, rounds);
        const params = raw as {
          messages: { role: string; content: unknown }[];
          systemPrompt?: string;
          maxTokens?: number;
        };
        term.say(
          `? The server asks for a model reply${params.maxTokens ? ` (at most ${params.maxTokens} tokens)` : ''}:`,
        );
        if (params.systemPrompt) term.say(indent(`system: ${params.systemPrompt}`));
        for (const message of params.messages) term.say(indent(`${message.role}: ${contentText(message.content)}`));
        const input = await term.ask(
          `  Reply as the model (Enter for "${SUGGESTED_REPLY}", ${CANCEL} stops the call): `,
        );
        if (input.trim().toLowerCase() === CANCEL) throw new CliError('cancelled at the sampling request');
        const text = input.trim() === '' ? SUGGESTED_REPLY : input;
        term.say(`  -> replied ${JSON.stringify(text)}`);
        return {
          role: 'assistant' as const,
          content: { type: 'text' as const, text },
          model: 'human (baton call)',
          stopReason: 'endTurn',
        };
      }),
    roots: async () => {
      announce(term, rounds);
      const cwd = process.cwd();
      const root = { uri: pathToFileURL(cwd).href, name: basename(cwd) || cwd };
      term.say(`? The server asks for roots: sent ${root.uri}`);
      return { roots: [root] };
    },
  };
}

function newClient(answers: InputAnswers): Client {
  const client = new Client(CLIENT_INFO, { capabilities: CAPABILITIES, versionNegotiation: { mode: 'auto' } });
  client.setRequestHandler('elicitation/create', (request) => answers.elicitation(request.params) as never);
  client.setRequestHandler('sampling/createMessage', (request) => answers.sampling(request.params) as never);
  client.setRequestHandler('roots/list', () => answers.roots() as never);
  return client;
}

/** Network error codes, in words. */
const NETWORK_ERRORS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection closed',
  UND_ERR_SOCKET: 'connection closed',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'timed out',
  UND_ERR_CONNECT_TIMEOUT: 'timed out',
};

/** What went wrong on the network, in words, when `error` (or one of its causes) is a network failure. */
export function networkFailure(error: unknown): string | undefined {
  const seen = new Set<unknown>();
  const queue = [error];
  let fetchFailed = false;
  while (queue.length > 0) {
    const e = queue.shift() as
      | { code?: unknown; cause?: unknown; errors?: unknown; message?: unknown; data?: { cause?: unknown } }
      | undefined;
    if (e === null || typeof e !== 'object' || seen.has(e)) continue;
    seen.add(e);
    if (typeof e.code === 'string' && NETWORK_ERRORS[e.code]) return NETWORK_ERRORS[e.code];
    if (typeof e.message === 'string' && /fetch failed/.test(e.message)) fetchFailed = true;
    // The SDK's errors carry theirs in `data.cause`; `AggregateError`s (IPv4 and IPv6 tried) in `errors`.
    queue.push(e.cause, e.data?.cause, ...(Array.isArray(e.errors) ? e.errors : []));
  }
  return fetchFailed ? 'no answer' : undefined;
}

/**
 * The HTTP answers of a call's transport, watched for the two a user can fix: 401 (no token, or
 * one the server refuses, with the server's `error_description`) and 404 (no MCP endpoint at
 * that path; `baton serve`'s is `/mcp`).
 */
class HttpWatch {
  #last: { status: number; challenge: string | null } | undefined;

  readonly fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const response = await withDefaultResultType(await fetch(input, init), init);
    this.#last = { status: response.status, challenge: response.headers.get('www-authenticate') };
    return response;
  };

  /** The line for the last answer when it was a 401 or a 404, else `undefined`. */
  refusal(url: URL, withToken: boolean): string | undefined {
    if (this.#last?.status === 401) {
      if (!withToken) {
        return this.#last.challenge?.includes('resource_metadata=')
          ? `this server needs a token: pass --token-file FILE (or set ${TOKEN_ENV}), or --oauth to sign in with its identity provider (HTTP 401)`
          : `this server needs a token: pass --token-file FILE (or set ${TOKEN_ENV}) (HTTP 401)`;
      }
      const said = /error_description="((?:[^"\\]|\\.)*)"/.exec(this.#last.challenge ?? '')?.[1];
      return `the server refused the token: ${said ? said.replaceAll(/\\(.)/g, '$1') : 'invalid token'} (HTTP 401)`;
    }
    if (this.#last?.status === 404) {
      const mcp = new URL('/mcp', url).href;
      return url.pathname === '/mcp'
        ? `nothing answers MCP at ${url.href} (HTTP 404)`
        : `nothing answers MCP at ${url.href} (HTTP 404): baton serve answers at /mcp, try --http ${mcp}`;
    }
    return undefined;
  }
}

/**
 * `call`, signed in again once when the server asks for it after the connection was made (a 403
 * `insufficient_scope` step-up, or a 401 from a server that moved to another authorization
 * server): with the browser sign-in, the SDK sends the user to sign in and throws
 * `UnauthorizedError`; once the redirect is back, the call is made again (the server refused
 * it, so it did not run).
 */
async function withStepUp<T>(
  auth: CallAuth | undefined,
  transport: StreamableHTTPClientTransport | StdioClientTransport,
  call: () => Promise<T>,
): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (!(error instanceof UnauthorizedError && auth?.callback && transport instanceof StreamableHTTPClientTransport)) {
      throw error;
    }
    await transport.finishAuth(await auth.callback());
    return call();
  }
}

function describeFailure(tool: string, where: string, error: unknown): CliError {
  if (error instanceof CliError) return error;
  if (error instanceof ProtocolError) return new CliError(`${tool}: ${oneLine(error)} (JSON-RPC error ${error.code})`);
  const network = networkFailure(error);
  if (network) {
    return new CliError(
      `lost ${where} during ${tool} (${network}): is the server still running? The flow was not completed; call again to start over`,
    );
  }
  return new CliError(`${tool}: ${oneLine(error)}`);
}

/** Run `baton call`; resolves to the exit code. */
export async function run(argv: string[]): Promise<number> {
  const options = parseCallArgs(argv);
  if (options === 'help') {
    process.stderr.write(help());
    return 0;
  }
  const term = openTerminal();
  const rounds: RoundState = { round: 0, refused: false, announced: false };
  const answers = terminalAnswers(term, rounds);
  let client = newClient(answers);
  // Ctrl-C outside a prompt (connecting, waiting on the server) is a real SIGINT.
  process.once('SIGINT', interrupted);
  let serverStderr = '';
  const http = new HttpWatch();
  const auth =
    options.http && options.oauth
      ? await createCallAuth(options.http, options.oauth, (line) => process.stderr.write(`${line}\n`))
      : undefined;
  const httpTransport = (url: URL) =>
    new StreamableHTTPClientTransport(url, {
      fetch: http.fetch,
      ...(options.token ? { requestInit: { headers: { authorization: `Bearer ${options.token}` } } } : {}),
      ...(auth ? { authProvider: auth.provider } : {}),
    });
  let transport = options.http
    ? httpTransport(options.http)
    : new StdioClientTransport({
        command: options.stdio![0]!,
        args: options.stdio!.slice(1),
        env: Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined)),
        stderr: 'pipe',
      });
  if (transport instanceof StdioClientTransport) {
    transport.stderr?.on('data', (chunk: Buffer) => {
      serverStderr = (serverStderr + chunk.toString()).slice(-4000);
    });
  }
  const where = options.http ? options.http.href : `"${options.stdio!.join(' ')}"`;
  try {
    try {
      try {
        await client.connect(transport);
      } catch (error) {
        // Authorization code: the SDK sent the user to sign in; finish with the redirect, reconnect.
        if (
          !(error instanceof UnauthorizedError && auth?.callback && transport instanceof StreamableHTTPClientTransport)
        ) {
          throw error;
        }
        await transport.finishAuth(await auth.callback());
        client = newClient(answers);
        transport = httpTransport(options.http!);
        await client.connect(transport);
      }
    } catch (error) {
      const network = options.http ? networkFailure(error) : undefined;
      if (network) throw new CliError(`cannot reach ${where} (${network}): is the server running?`);
      const refused =
        options.http && http.refusal(options.http, options.token !== undefined || options.oauth !== undefined);
      if (refused) throw new CliError(refused);
      const last = serverStderr.trim().split('\n').pop();
      throw new CliError(`cannot connect to ${where}: ${oneLine(error)}${last ? ` (server said: ${last})` : ''}`);
    }
    if (options.list) {
      let tools: unknown[];
      try {
        tools = await withStepUp(auth, transport, () => listAllTools(client));
      } catch (error) {
        const refused =
          options.http && http.refusal(options.http, options.token !== undefined || options.oauth !== undefined);
        throw refused ? new CliError(refused) : describeFailure('tools/list', where, error);
      }
      process.stdout.write(`${JSON.stringify(tools, null, 2)}\n`);
      return 0;
    }
    const tool = options.tool!;
    let problem: Awaited<ReturnType<typeof checkToolCall>>;
    try {
      problem = await withStepUp(auth, transport, () => checkToolCall(client, tool, options.args, where));
    } catch (error) {
      const refused =
        options.http && http.refusal(options.http, options.token !== undefined || options.oauth !== undefined);
      throw refused ? new CliError(refused) : describeFailure(tool, where, error);
    }
    if (problem?.warning) process.stderr.write(`baton: warning: ${problem.warning}\n`);
    if (problem?.error) throw problem.error;
    process.stderr.write(`Calling ${tool} ${JSON.stringify(options.args)} on ${where}\n`);
    let result: CallToolResult;
    if (options.follow && options.http) {
      // Ctrl-C while following detaches from the task (it goes on on the server): see followTask.ts.
      // Until the task exists, Ctrl-C still interrupts (exit 130).
      let followed: CallToolResult | undefined;
      try {
        followed = await followTask({
          client,
          url: options.http,
          token: options.token ?? (await auth?.provider.tokens())?.access_token,
          tool: tool,
          args: options.args,
          clientInfo: CLIENT_INFO,
          capabilities: CAPABILITIES,
          answers,
          say: (line) => term.say(line),
          lookAgain: (id) => callCommand(options, 'baton_resume', { id }),
          onFollowing: () => process.off('SIGINT', interrupted),
        });
      } catch (error) {
        const refused = http.refusal(options.http, options.token !== undefined || options.oauth !== undefined);
        throw refused ? new CliError(refused) : describeFailure(tool, where, error);
      }
      if (!followed) return EXIT_INTERRUPTED;
      result = followed;
    } else {
      try {
        result = await withStepUp(auth, transport, () =>
          client.callTool(
            { name: tool, arguments: options.args },
            {
              onprogress: ({ progress, total, message }) => {
                const round = message ? /\(round (\d+)\)/.exec(message)?.[1] : undefined;
                if (!round) {
                  term.say(
                    `-- progress ${progress}${total !== undefined ? `/${total}` : ''}${message ? `: ${message}` : ''}`,
                  );
                  return;
                }
                Object.assign(rounds, { round: Number(round), refused: false, announced: false });
                // The SDK asks a round's questions as soon as it reports the round; one that has asked
                // nothing a moment later asks nothing at all: the server's "retry later".
                const current = rounds.round;
                setTimeout(() => {
                  if (rounds.round === current && !rounds.announced) {
                    rounds.announced = true;
                    term.say(`\n-- round ${current}: ${WAITING_ROUND} --`);
                  }
                }, 100).unref();
              },
            },
          ),
        );
      } catch (error) {
        const refused =
          options.http && http.refusal(options.http, options.token !== undefined || options.oauth !== undefined);
        throw refused ? new CliError(refused) : describeFailure(tool, where, error);
      }
    }
    const text = resultText(result);
    if (result.isError) {
      process.stderr.write(`\n-- ${tool} returned an error --\n`);
      process.stdout.write(`${text}\n`);
      return EXIT_FAILURE;
    }
    const waiting = waitingLine(result, options);
    if (waiting) {
      process.stderr.write(`\n-- waiting for someone else's decision --\n${text}\n`);
      process.stdout.write(`${waiting}\n`);
      return 0;
    }
    process.stderr.write('\n-- result --\n');
    process.stdout.write(`${text}\n`);
    return 0;
  } finally {
    process.off('SIGINT', interrupted);
    term.close();
    await client.close().catch(() => {});
    await auth?.close();
  }
}
