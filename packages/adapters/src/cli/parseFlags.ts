/**
 * Flag parsing shared by every `baton` command: node:util `parseArgs` in
 * strict mode with positionals, its errors turned into one-line usage errors
 * ("unknown option --x", "--http needs a value") that name the command's usage.
 */
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { oneLine, usageError } from './cliError.js';

type Options = NonNullable<ParseArgsConfig['options']>;

/** Parse `argv` against `options`; throws a usage error (exit 2) naming `usage` on bad flags. */
export function parseFlags<const T extends Options>(argv: string[], options: T, usage: string) {
  try {
    return parseArgs({ args: argv, options, allowPositionals: true, strict: true });
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
