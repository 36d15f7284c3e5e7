/**
 * The adapters README against the `baton` commands' own flag tables. For every
 * command `baton --help` lists, read its module's `USAGE` and `OPTIONS` (the
 * table `parseArgs` parses) and check: the README's command table shows the
 * synopsis `USAGE`, and so does the command's section when it has a synopsis
 * block; every flag the parser takes (but `--help`) is in that synopsis, in
 * `baton <command> --help`, and in the section: one bullet per flag where the
 * section lists its flags (and no bullet for a flag the parser does not take),
 * else named in its text. A flag added to a parser and not to the README fails.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ROOT, runCli } from './helpers/mcpClients.js';

const README = readFileSync(join(ROOT, 'packages/adapters/README.md'), 'utf8');

/** What every command module exports besides `run`. */
interface CommandTables {
  readonly USAGE: string;
  readonly OPTIONS: Readonly<Record<string, { readonly type: string; readonly short?: string }>>;
}

/** The command names `baton --help` lists (the CLI's own command table). */
async function commandNames(): Promise<string[]> {
  const { stderr } = await runCli(['--help']);
  const list = stderr.split('commands:\n')[1]?.split('\n\n')[0] ?? '';
  return list
    .split('\n')
    .map((line) => line.trim().split(/\s+/)[0] ?? '')
    .filter((name) => name !== '');
}

/** White space folded to single spaces. */
const fold = (text: string) => text.replace(/\s+/g, ' ').trim();

/** The README section `## \`baton NAME\``, up to the next `## ` heading. */
function section(name: string): string | undefined {
  const start = README.indexOf(`\n## \`baton ${name}\`\n`);
  if (start < 0) return undefined;
  const end = README.indexOf('\n## ', start + 1);
  return README.slice(start, end < 0 ? undefined : end);
}

/** The synopsis in the README's command table: the first cell of the row for `baton NAME`. */
function tableSynopsis(name: string): string | undefined {
  const row = README.split('\n').find(
    (line) => line.startsWith(`| \`baton ${name} `) || line.startsWith(`| \`baton ${name}\``),
  );
  const cell = row?.match(/^\| `((?:[^`])+)`/)?.[1];
  return cell?.replaceAll('\\|', '|');
}

/** A section's synopsis: its first plain fenced block that starts with `baton NAME`. */
function sectionSynopsis(text: string, name: string): string | undefined {
  for (const [, body] of text.matchAll(/^```\n([\s\S]*?)^```$/gm)) {
    if (body!.startsWith(`baton ${name}`)) return body;
  }
  return undefined;
}

/** `--flag` standing alone in `text` (not the start of a longer flag). */
const mentions = (text: string, flag: string) => new RegExp(`--${flag}(?![\\w-])`).test(text);

const NAMES = await commandNames();

describe('the adapters README documents every flag each baton command parses', () => {
  it('finds the commands', () => {
    expect(NAMES).toEqual(expect.arrayContaining(['serve', 'call', 'inspect', 'init', 'diagram', 'keygen']));
  });

  describe.concurrent.each(NAMES)('baton %s', (name) => {
    it('shows its synopsis, and every flag, in the command table, its section and --help', async () => {
      const module = pathToFileURL(join(ROOT, 'packages/adapters/src/cli', `${name}.ts`)).href;
      const { USAGE, OPTIONS } = (await import(/* @vite-ignore */ module)) as CommandTables;
      const flags = Object.keys(OPTIONS).filter((flag) => flag !== 'help');

      expect(fold(tableSynopsis(name) ?? ''), 'the command table row').toBe(fold(USAGE));
      const text = section(name);
      expect(text, `a "## \`baton ${name}\`" section`).toBeDefined();
      const synopsis = sectionSynopsis(text!, name);
      if (synopsis !== undefined) expect(fold(synopsis), 'the section synopsis').toBe(fold(USAGE));

      const help = await runCli([name, '--help']);
      expect(help.code).toBe(0);
      for (const flag of flags) {
        expect(mentions(USAGE, flag), `--${flag} in USAGE`).toBe(true);
        expect(mentions(help.stdout + help.stderr, flag), `--${flag} in baton ${name} --help`).toBe(true);
      }

      const bullets = [...text!.matchAll(/^- `--([\w-]+)/gm)].map((match) => match[1]!);
      if (bullets.length > 0) {
        expect([...bullets].sort(), 'one README bullet per flag, no other').toEqual([...flags].sort());
      } else {
        for (const flag of flags) expect(mentions(text!, flag), `--${flag} in the README section`).toBe(true);
      }
    }, 60_000);
  });
});
