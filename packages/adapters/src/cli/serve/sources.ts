/**
 * Where `baton serve`'s configuration comes from, in order of precedence: the flags, the `BATON_*`
 * environment, then the config file (`--config FILE`, `BATON_CONFIG`, else the first of
 * `baton.config.ts`, `.mts`, `.js`, `.mjs` in the working folder). Each source becomes the same
 * raw values the flags give (strings, switches, lists of strings, keyed by flag name), merged
 * field by field, with the source of each value kept for messages and `--print-config`. The file
 * is loaded the way flows modules are (TypeScript through tsx) and validated by the schema of
 * `config.ts`; what is wrong with it is one line naming the file and the field, exit 2. Values are
 * checked by `checks.ts`, the same way whatever their source.
 */
import { existsSync } from 'node:fs';
import { basename, dirname, relative, resolve } from 'node:path';
import { importModule } from '../../flowsModule.js';
import { CliError, EXIT_USAGE, oneLine, usageError } from '../cliError.js';
import { type FlagSpecs, parseFlags } from '../parseFlags.js';
import { FIELD_BY_FLAG, SERVE_FIELDS, type ServeFieldSpec, serveConfigSchema } from './config.js';

/** A raw value, as a flag gives it. */
export type RawValue = string | boolean | string[];

/** Where a value came from. */
export type Source =
  | { readonly kind: 'flag' }
  | { readonly kind: 'env'; readonly name: string }
  | { readonly kind: 'file'; readonly file: string };

/** Raw values by flag name (`max-ttl`), plus `flows`; each with its source. */
export interface Gathered {
  readonly values: Readonly<Record<string, RawValue>>;
  readonly sources: ReadonlyMap<string, Source>;
  /** The config file read, as shown in messages (relative to the working folder). */
  readonly file?: string;
  readonly help: boolean;
  readonly printConfig: boolean;
}

/** The file names looked for in the working folder, in order. */
export const CONFIG_FILES = ['baton.config.ts', 'baton.config.mts', 'baton.config.js', 'baton.config.mjs'];

/** The flag table of `baton serve`: one flag per field of the model, plus `--config`, `--print-config`, `--help`. */
export const SERVE_FLAGS: FlagSpecs = {
  ...Object.fromEntries(
    SERVE_FIELDS.filter((f) => f.flag).map((f) => [
      f.flag!,
      { type: f.kind === 'boolean' ? 'boolean' : 'string', ...(f.meta.multiple ? { multiple: true } : {}) },
    ]),
  ),
  config: { type: 'string' },
  'print-config': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

/** How a value's source is named in a message: `--ttl`, `BATON_TTL`, `baton.config.ts: ttl`. */
export function labelOf(flag: string, sources: ReadonlyMap<string, Source>): string {
  const source = sources.get(flag);
  const field = flag === 'flows' ? undefined : FIELD_BY_FLAG.get(flag);
  if (source?.kind === 'env') return source.name;
  if (source?.kind === 'file') return `${source.file}: ${field?.name ?? flag}`;
  return flag === 'flows' ? '<flows-module>' : `--${flag}`;
}

/** A source as `--print-config` shows it. */
export function describeSource(source: Source | undefined): string {
  if (!source) return 'default';
  return source.kind === 'flag' ? 'flag' : source.kind === 'env' ? `env ${source.name}` : `file ${source.file}`;
}

/** The key of a field in the raw values: its flag name, or `flows`. */
const keyOf = (field: ServeFieldSpec): string => field.flag ?? field.name;

/** The environment's values: `BATON_<FIELD>` for each field (empty counts as unset). */
function fromEnv(env: NodeJS.ProcessEnv): Map<string, { value: RawValue; source: Source }> {
  const found = new Map<string, { value: RawValue; source: Source }>();
  for (const field of SERVE_FIELDS) {
    const text = env[field.env]?.trim();
    if (text === undefined || text === '') continue;
    const source = { kind: 'env', name: field.env } as const;
    if (field.kind === 'boolean') {
      if (!['true', 'false', '1', '0'].includes(text)) {
        throw usageError(`${field.env} expects true, false, 1 or 0, got "${text}"`);
      }
      // A false is kept: it overrides a true of the file.
      found.set(keyOf(field), { value: text === 'true' || text === '1', source });
    } else if (field.meta.multiple) {
      const list = text.split(',').map((entry) => entry.trim());
      found.set(keyOf(field), { value: list.filter((entry) => entry !== ''), source });
    } else {
      found.set(keyOf(field), { value: text, source });
    }
  }
  return found;
}

/** The config file to read: `--config`, `BATON_CONFIG`, else one found in `cwd`. */
function configPath(flag: string | undefined, env: NodeJS.ProcessEnv, cwd: string): string | undefined {
  const named = flag ?? (env.BATON_CONFIG?.trim() || undefined);
  if (named !== undefined) {
    const path = resolve(cwd, named);
    if (!existsSync(path)) {
      throw usageError(`config file ${named} does not exist (${flag === undefined ? 'BATON_CONFIG' : '--config'})`);
    }
    return path;
  }
  return CONFIG_FILES.map((name) => resolve(cwd, name)).find((path) => existsSync(path));
}

/** The first of zod's issues as `field: message`. */
function issueLine(issue: { path: PropertyKey[]; message: string; code: string; keys?: string[] }): string {
  if (issue.code === 'unrecognized_keys' && issue.keys) {
    const names = issue.keys.map((key) => `"${key}"`).join(', ');
    return `unknown field${issue.keys.length === 1 ? '' : 's'} ${names} (the fields are the flags of baton serve in camelCase, e.g. maxTtl)`;
  }
  const path = issue.path.map(String).join('.');
  return path === '' ? issue.message : `${path}: ${issue.message}`;
}

/** The file's values as raw values (numbers as their digits, lists comma-joined, paths made absolute). */
async function fromFile(path: string, shown: string): Promise<Map<string, { value: RawValue; source: Source }>> {
  let exports: Record<string, unknown>;
  try {
    exports = await importModule(path);
  } catch (error) {
    throw new CliError(`cannot load config file ${shown}: ${oneLine(error)}`, EXIT_USAGE);
  }
  const config = exports.default;
  if (typeof config !== 'object' || config === null || Array.isArray(config)) {
    throw new CliError(`${shown}: export default defineConfig({ ... }) (an object)`, EXIT_USAGE);
  }
  const parsed = serveConfigSchema.safeParse(config);
  if (!parsed.success) {
    // An unknown field first: a typo explains the other issues.
    const issues = [...parsed.error.issues].sort(
      (a, b) => Number(b.code === 'unrecognized_keys') - Number(a.code === 'unrecognized_keys'),
    );
    throw new CliError(`${shown}: ${issueLine(issues[0] as never)}`, EXIT_USAGE);
  }
  const source = { kind: 'file', file: shown } as const;
  const found = new Map<string, { value: RawValue; source: Source }>();
  for (const field of SERVE_FIELDS) {
    const value = (parsed.data as Record<string, unknown>)[field.name];
    if (value === undefined) continue;
    const raw: RawValue =
      typeof value === 'boolean'
        ? value
        : Array.isArray(value)
          ? value.join(',')
          : field.meta.path
            ? resolve(dirname(path), String(value))
            : String(value);
    found.set(keyOf(field), { value: raw, source });
  }
  return found;
}

/**
 * Gather `baton serve`'s raw configuration from `argv`, `env` and the config file.
 * @throws CliError (exit 2) for a bad flag, a bad environment value or a bad config file.
 */
export async function gatherSources(
  argv: string[],
  usage: string,
  env: NodeJS.ProcessEnv = process.env,
  cwd = process.cwd(),
): Promise<Gathered> {
  const { values: flags, positionals } = parseFlags(argv, SERVE_FLAGS, usage);
  if (flags.help) return { values: {}, sources: new Map(), help: true, printConfig: false };
  if (positionals.length > 1) throw usageError('expected one <flows-module>', usage);
  const path = configPath(flags.config as string | undefined, env, cwd);
  const shown =
    path === undefined
      ? undefined
      : relative(cwd, path).startsWith('..')
        ? path
        : relative(cwd, path) || basename(path);
  const layers = [
    path === undefined ? new Map() : await fromFile(path, shown!),
    fromEnv(env),
    new Map<string, { value: RawValue; source: Source }>([
      ...Object.entries(flags)
        .filter(([name]) => FIELD_BY_FLAG.has(name))
        .map(([name, value]) => [name, { value: value as RawValue, source: { kind: 'flag' } as const }] as const),
      ...(positionals[0] !== undefined
        ? [['flows', { value: positionals[0], source: { kind: 'flag' } as const }] as const]
        : []),
    ]),
  ];
  const values: Record<string, RawValue> = {};
  const sources = new Map<string, Source>();
  for (const layer of layers) {
    // The transport is one choice: a source that names one replaces the other of a weaker source
    // (`BATON_STDIO=false` names none).
    if (layer.has('http') || layer.get('stdio')?.value === true) {
      for (const key of ['http', 'stdio']) {
        delete values[key];
        sources.delete(key);
      }
    }
    for (const [key, { value, source }] of layer) {
      values[key] = value;
      sources.set(key, source);
    }
  }
  return {
    values,
    sources,
    ...(shown !== undefined ? { file: shown } : {}),
    help: false,
    printConfig: flags['print-config'] === true,
  };
}
