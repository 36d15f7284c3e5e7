/**
 * Flag parsing shared by every `baton` command: node:util `parseArgs` in
 * strict mode with positionals, its errors turned into one-line usage errors
 * ("unknown option --x", "--http needs a value") that name the command's usage.
 *
 * `parseArgs` takes any argument starting with `-` for an option, so
 * `--ttl -5` would read as "--ttl needs a value". Here the argument after an
 * option that takes a value is that option's value unless it is itself an
 * option of the command or looks like a long option (`--name`): `--ttl -5`
 * reaches the command as the value `-5`, whose own check explains what is
 * wrong with it, while `--http --stdio` still says "--http needs a value".
 */
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { oneLine, usageError } from './cliError.js';

type Options = NonNullable<ParseArgsConfig['options']>;

/** The long name of the option `arg` spells exactly (`--name` or `-n`), if any. */
function optionNamed(arg: string, options: Options): string | undefined {
  if (arg.startsWith('--')) return Object.hasOwn(options, arg.slice(2)) ? arg.slice(2) : undefined;
  if (/^-[^-]$/.test(arg)) return Object.entries(options).find(([, o]) => o.short === arg[1])?.[0];
  return undefined;
}

/** Whether `arg` reads as an option rather than a value starting with `-`. */
function looksLikeOption(arg: string, options: Options): boolean {
  if (arg === '--' || /^--[^-]/.test(arg)) return true;
  return /^-[^-]/.test(arg) && Object.values(options).some((o) => o.short === arg[1]);
}

/** Join `--name VALUE` into `--name=VALUE` where VALUE starts with `-` but is no option. */
export function attachDashValues(argv: readonly string[], options: Options): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      out.push(...argv.slice(i));
      break;
    }
    const name = optionNamed(arg, options);
    const next = argv[i + 1] ?? '';
    if (
      name !== undefined &&
      options[name]!.type === 'string' &&
      next.startsWith('-') &&
      !looksLikeOption(next, options)
    ) {
      out.push(`--${name}=${next}`);
      i++;
    } else {
      out.push(arg);
    }
  }
  return out;
}

/** Parse `argv` against `options`; throws a usage error (exit 2) naming `usage` on bad flags. */
export function parseFlags<const T extends Options>(argv: string[], options: T, usage: string) {
  try {
    return parseArgs({ args: attachDashValues(argv, options), options, allowPositionals: true, strict: true });
  } catch (error) {
    const code = (error as { code?: string }).code;
    const option = /'([^']+)'/.exec(oneLine(error))?.[1];
    const message =
      code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && option
        ? `unknown option ${option}`
        : code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && option
          ? `${option.split(' ')[0]} needs a value`
          : oneLine(error);
    throw usageError(message, usage);
  }
}
