#!/usr/bin/env node
/**
 * The `baton` command line. Each command is its own module under `cli/`
 * exporting `run(argv): Promise<number>` (the exit code), loaded only when
 * named, so commands such as `call`, `diagram` or `inspect` are added as
 * sibling modules plus one line in {@link COMMANDS}. Any failure prints one
 * line on stderr and exits non-zero; there is never a stack trace, and a
 * finished command never leaves the process hanging.
 */
import { EXIT_USAGE, reportFailure } from './cliError.js';
import { nearMiss } from './parseFlags.js';
import { runAs } from './runAs.js';

/** A command module: runs with the arguments after its name, resolves to the exit code. */
export interface Command {
  run(argv: string[]): Promise<number>;
}

/** Every command, by name, with a one-line summary. */
export const COMMANDS: Record<string, { summary: string; load: () => Promise<Command> }> = {
  init: { summary: 'write a starter project: a flow, its test, scripts to serve it', load: () => import('./init.js') },
  serve: { summary: 'serve a flows module over stateless HTTP or stdio', load: () => import('./serve.js') },
  call: { summary: 'call a tool and answer its requests at the terminal', load: () => import('./call.js') },
  diagram: { summary: 'print a flow as a Mermaid stateDiagram-v2', load: () => import('./diagram.js') },
  inspect: { summary: 'serve a local page of flow graphs and recorded runs', load: () => import('./inspect.js') },
  'send-event': {
    summary: 'send an event to the flows a served module waits with',
    load: () => import('./send-event.js'),
  },
  runs: { summary: 'list and show flow runs parked in a ledger', load: () => import('./runs.js') },
  delegates: { summary: 'set, list and remove absence delegates of deciders', load: () => import('./delegates.js') },
  keygen: {
    summary: 'print a fresh random key for BATON_KEYS (--webhook-secret: a whsec_ secret)',
    load: () => import('./keygen.js'),
  },
};

function help(): string {
  const baton = runAs();
  const lines = Object.entries(COMMANDS).map(([name, { summary }]) => `  ${name.padEnd(12)}${summary}`);
  return `usage: ${baton} <command> [options]\n\ncommands:\n${lines.join('\n')}\n\nRun "${baton} <command> --help" for a command's options.\n`;
}

/** The line for a command name that is none of {@link COMMANDS}, with commander's suggestion for a near miss. */
function unknownCommand(name: string): string {
  const suggestion = nearMiss(name, Object.keys(COMMANDS));
  const hint = suggestion ? `: did you mean ${suggestion}?` : '';
  return `unknown command "${name}"${hint} (commands: ${Object.keys(COMMANDS).join(', ')})`;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stderr.write(help());
    return name === undefined ? EXIT_USAGE : 0;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) {
    process.stderr.write(`baton: ${unknownCommand(name)}\n`);
    return EXIT_USAGE;
  }
  return (await command.load()).run(rest);
}

/**
 * Once a command has finished, nothing it loaded may keep the process alive (an inspector's
 * socket, a user module's timer): exit with its code after a grace period for pending writes.
 */
function finish(code: number): void {
  process.exitCode = code;
  setTimeout(() => process.exit(code), 1000).unref();
}

main(process.argv.slice(2)).then(finish, (error: unknown) => finish(reportFailure(error)));
