/**
 * Flag parsing shared by every `baton` command, on commander: each command
 * declares its options as a small table (`{ ttl: { type: 'string' } }`, the
 * shape node:util `parseArgs` takes), and gets back `{ values, positionals }`.
 * Commander's errors become one-line usage errors that name the command's
 * usage: "unknown option --htpp: did you mean --http?", the suggestion being
 * commander's own, and "--http needs a value".
 *
 * An option that takes a value takes the next argument even when it starts
 * with `-` (`--ttl -5` reaches the command as `-5`, whose own check explains
 * what is wrong with it), unless that argument is itself an option of the
 * command or looks like a long option (`--name`): `--http --stdio` says
 * "--http needs a value" rather than serving at "--stdio".
 */
import { Command, CommanderError, Option } from 'commander';
import { usageError } from './cliError.js';

/** One option of a command: a value (`string`) or a switch (`boolean`), with an optional one-letter alias. */
export interface FlagSpec {
  readonly type: 'string' | 'boolean';
  readonly short?: string;
  /** A `string` option that may be given several times: its values in order. */
  readonly multiple?: true;
}

/** A command's options by long name. */
export type FlagSpecs = Readonly<Record<string, FlagSpec>>;

/** Parsed flags: each given option's value (`string` or `true`) and the positional arguments. */
export interface ParsedFlags<T extends FlagSpecs> {
  readonly values: {
    readonly [K in keyof T]?: T[K]['multiple'] extends true
      ? string[]
      : T[K]['type'] extends 'string'
        ? string
        : boolean;
  };
  readonly positionals: string[];
}

/** The long name of the option `arg` spells exactly (`--name`, `--name=…` or `-n`), if any. */
function optionNamed(arg: string, options: FlagSpecs): string | undefined {
  if (arg.startsWith('--')) {
    const name = arg.slice(2).split('=')[0]!;
    return Object.hasOwn(options, name) ? name : undefined;
  }
  if (/^-[^-]$/.test(arg)) return Object.entries(options).find(([, o]) => o.short === arg[1])?.[0];
  return undefined;
}

/** Whether `arg` reads as an option rather than a value starting with `-`. */
function looksLikeOption(arg: string, options: FlagSpecs): boolean {
  if (arg === '--' || /^--[^-]/.test(arg)) return true;
  return /^-[^-]/.test(arg) && Object.values(options).some((o) => o.short === arg[1]);
}

/** Refuse `--name` followed by nothing or by another option when `--name` takes a value. */
function checkValues(argv: readonly string[], options: FlagSpecs, usage: string): void {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') return;
    const name = optionNamed(arg, options);
    if (name === undefined || options[name]!.type !== 'string' || arg.includes('=')) continue;
    const next = argv[i + 1];
    if (next === undefined || looksLikeOption(next, options)) throw usageError(`--${name} needs a value`, usage);
    i++;
  }
}

/** Commander's error message as one line: `error: unknown option '--x'\n(Did you mean --y?)` -> `unknown option --x: did you mean --y?`. */
function commanderLine(error: CommanderError): string {
  const [first = '', ...rest] = error.message.split('\n').filter((line) => line.trim() !== '');
  const main = first.replace(/^error: /, '').replace(/'(-[^']*)'/g, '$1');
  const suggestion = /^\(Did you mean (.+)\)$/.exec(rest.join(' ').trim())?.[1];
  return suggestion ? `${main}: did you mean ${suggestion}` : main;
}

/**
 * Marks a value that starts with `-` and is longer than one option letter, e.g. a request id
 * `-YHPOddMwFlZqZD13us7Ug` (base64url), so that Commander reads it as a value, never as
 * short options (every short option here is a lone letter: `-h`).
 */
const DASH_VALUE = '\u0000';
const escapeDashValue = (arg: string): string => (/^-[^-]./.test(arg) ? `${DASH_VALUE}${arg}` : arg);
const unescapeDashValue = (arg: string): string => (arg.startsWith(DASH_VALUE) ? arg.slice(1) : arg);

/** Parse `argv` against `options`; throws a usage error (exit 2) naming `usage` on bad flags. */
export function parseFlags<const T extends FlagSpecs>(argv: string[], options: T, usage: string): ParsedFlags<T> {
  checkValues(argv, options, usage);
  const command = new Command()
    .helpOption(false)
    .allowExcessArguments(true)
    .argument('[arguments...]')
    .exitOverride()
    .configureOutput({ writeErr: () => {}, writeOut: () => {} });
  const attributes = new Map<string, string>();
  for (const [name, spec] of Object.entries(options)) {
    const flags = `${spec.short ? `-${spec.short}, ` : ''}--${name}${spec.type === 'string' ? ' <value>' : ''}`;
    const option = new Option(flags);
    if (spec.multiple)
      option.argParser((value: string, previous: string[] | undefined) => [...(previous ?? []), value]);
    attributes.set(name, option.attributeName());
    command.addOption(option);
  }
  try {
    command.parse(argv.map(escapeDashValue), { from: 'user' });
  } catch (error) {
    throw error instanceof CommanderError ? usageError(commanderLine(error), usage) : error;
  }
  const values: Record<string, string | string[] | boolean> = {};
  for (const [name, attribute] of attributes) {
    const value = command.getOptionValue(attribute) as string | string[] | boolean | undefined;
    // Commander reads `--no-x` as the negation of `x` (true unless given): given is `true` here.
    if (name.startsWith('no-') && typeof value === 'boolean') {
      if (value === false) values[name] = true;
      continue;
    }
    if (typeof value === 'string') values[name] = unescapeDashValue(value);
    else if (Array.isArray(value)) values[name] = value.map(unescapeDashValue);
    else if (value !== undefined) values[name] = value;
  }
  return { values: values as ParsedFlags<T>['values'], positionals: command.args.map(unescapeDashValue) };
}

/**
 * Commander's suggestion for `word` among `candidates` (what it says for a mistyped command:
 * a close edit distance, several when equally close), or `undefined` when none is near.
 * @example `nearMiss('serv', ['init', 'serve'])` -> `'serve'`
 */
export function nearMiss(word: string, candidates: readonly string[]): string | undefined {
  const program = new Command()
    .helpOption(false)
    .exitOverride()
    .configureOutput({ writeErr: () => {}, writeOut: () => {} });
  for (const name of new Set(candidates)) {
    program
      .command(name)
      .helpOption(false)
      .allowUnknownOption()
      .allowExcessArguments(true)
      .action(() => {});
  }
  try {
    program.parse([word], { from: 'user' });
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    return /\(Did you mean ([^?]+)\?\)/.exec(error.message)?.[1];
  }
  return undefined;
}
