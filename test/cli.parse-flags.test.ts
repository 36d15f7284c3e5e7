/**
 * The flag parser every `baton` command shares: a value that starts with `-`
 * (a base64url request id such as `-YHPOddMwFlZqZD13us7Ug`, one id in 64) is a
 * value, as a positional and after an option that takes one, while a mistyped
 * option still fails in one line.
 */
import { describe, expect, it } from 'vitest';
import { parseFlags } from '../packages/adapters/src/cli/parseFlags.js';

const OPTIONS = {
  reason: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

describe('parseFlags', () => {
  it('reads ids starting with - as positionals and as values', () => {
    const parsed = parseFlags(
      ['show', '-YHPOddMwFlZqZD13us7Ug', '-hAAAAAAAAAAAAAAAAAAAAA', '--reason', '-x stuck', '--json'],
      OPTIONS,
      'usage',
    );
    expect(parsed.positionals).toEqual(['show', '-YHPOddMwFlZqZD13us7Ug', '-hAAAAAAAAAAAAAAAAAAAAA']);
    expect(parsed.values).toEqual({ reason: '-x stuck', json: true });
  });

  it('still reads -h and refuses unknown options', () => {
    expect(parseFlags(['-h'], OPTIONS, 'usage').values).toEqual({ help: true });
    expect(() => parseFlags(['--bogus'], OPTIONS, 'usage')).toThrow(/unknown option --bogus/);
    expect(() => parseFlags(['-q'], OPTIONS, 'usage')).toThrow(/unknown option -q/);
  });
});
