/**
 * `baton keygen`: print one fresh master key for `BATON_KEYS` on stdout (32
 * random bytes from the OS CSPRNG, base64url, 43 characters), and nothing
 * else, so `export BATON_KEYS=$(baton keygen)` works. To rotate, prepend a
 * new key: `BATON_KEYS=$(baton keygen),$BATON_KEYS`.
 */
import { generateKey } from '@baton/engine';
import { usageError } from './cliError.js';
import { parseFlags } from './parseFlags.js';

/** The command's synopsis, as `--help`, usage errors and the README show it. */
export const USAGE = 'baton keygen';

const HELP = `usage: ${USAGE}

Print one fresh master key for BATON_KEYS on stdout: 32 random bytes, base64url.

  export BATON_KEYS=$(baton keygen)                 a first key
  export BATON_KEYS=$(baton keygen),$BATON_KEYS     rotate: the new key mints, the old ones still verify
`;

/** The flags the command parses (node:util `parseArgs` options); the README documents each. */
export const OPTIONS = { help: { type: 'boolean', short: 'h' } } as const;

/** Run `baton keygen`; resolves to the exit code. */
export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, OPTIONS, USAGE);
  if (values.help) {
    process.stderr.write(HELP);
    return 0;
  }
  if (positionals.length > 0) throw usageError(`keygen takes no arguments, got "${positionals[0]}"`, USAGE);
  process.stdout.write(`${generateKey()}\n`);
  return 0;
}
