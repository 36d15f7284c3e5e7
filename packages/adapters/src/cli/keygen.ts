/**
 * `baton keygen`: print one fresh master key for `BATON_KEYS` on stdout (32
 * random bytes from the OS CSPRNG, base64url, 43 characters), and nothing
 * else, so `export BATON_KEYS=$(baton keygen)` works. To rotate, prepend a
 * new key: `BATON_KEYS=$(baton keygen),$BATON_KEYS`. With `--webhook-secret`
 * it prints a Standard Webhooks secret instead: `whsec_` and the standard
 * base64 of 32 random bytes, as `--notify-secret`, `--event-secret` and the
 * `standardwebhooks` package take it.
 */
import { randomBytes } from 'node:crypto';
import { generateKey } from '@baton/engine';
import { usageError } from './cliError.js';
import { parseFlags } from './parseFlags.js';

/** The command's synopsis, as `--help`, usage errors and the README show it. */
export const USAGE = 'baton keygen [--webhook-secret]';

/** Random bytes in a webhook secret (Standard Webhooks takes 24 to 64). */
const WEBHOOK_SECRET_BYTES = 32;

const HELP = `usage: ${USAGE}

Print one fresh master key for BATON_KEYS on stdout: 32 random bytes, base64url.

  export BATON_KEYS=$(baton keygen)                 a first key
  export BATON_KEYS=$(baton keygen),$BATON_KEYS     rotate: the new key mints, the old ones still verify

  --webhook-secret     print a webhook signing secret instead: whsec_ and the base64 of 32 random
                       bytes (Standard Webhooks), for --notify-secret, --event-secret and senders

  baton keygen --webhook-secret > notify.secret     then: baton serve ... --notify-secrets-file notify.secret
`;

/** The flags the command parses (node:util `parseArgs` options); the README documents each. */
export const OPTIONS = {
  help: { type: 'boolean', short: 'h' },
  'webhook-secret': { type: 'boolean' },
} as const;

/** A fresh Standard Webhooks secret: `whsec_` and the base64 of 32 random bytes. */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(WEBHOOK_SECRET_BYTES).toString('base64')}`;
}

/** Run `baton keygen`; resolves to the exit code. */
export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, OPTIONS, USAGE);
  if (values.help) {
    process.stderr.write(HELP);
    return 0;
  }
  if (positionals.length > 0) throw usageError(`keygen takes no arguments, got "${positionals[0]}"`, USAGE);
  process.stdout.write(`${values['webhook-secret'] ? generateWebhookSecret() : generateKey()}\n`);
  return 0;
}
