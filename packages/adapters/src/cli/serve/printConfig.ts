/**
 * `baton serve --print-config`: the effective configuration as JSON on stdout, one entry per
 * field that has a value (given, or a default the engine applies), each with its source: `flag`,
 * `env BATON_X`, `file baton.config.ts` or `default`. Secrets (the inline webhook and event
 * secrets, the password of a ledger URL, `BATON_KEYS`) are shown as `[redacted]`. Nothing is
 * bound, opened or loaded beyond the config file itself.
 */
import { SERVE_FIELDS, type ServeFieldSpec } from './config.js';
import { describeSource, type Gathered, type RawValue } from './sources.js';

/** What stands for a secret. */
export const REDACTED = '[redacted]';

/** One field of the printed configuration. */
export interface PrintedValue {
  readonly value: unknown;
  readonly source: string;
}

/** The printed configuration. */
export interface PrintedConfig {
  /** The config file read, or `null`. */
  readonly file: string | null;
  readonly fields: Readonly<Record<string, PrintedValue>>;
  /** `BATON_KEYS`: redacted when set, else the per-process key start-up would make. */
  readonly keys: PrintedValue;
}

/** A raw value as its field's type (`"600"` -> `600` for a number, `"a,b"` -> `["a", "b"]` for a list). */
function typed(field: ServeFieldSpec, raw: RawValue): unknown {
  if (field.meta.secret === true) return Array.isArray(raw) ? raw.map(() => REDACTED) : REDACTED;
  if (field.meta.secret === 'url' && typeof raw === 'string') {
    return raw.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:@/]*:)[^@/]*@/i, `$1${REDACTED}@`);
  }
  if (field.kind === 'number' && typeof raw === 'string') return Number(raw);
  if (field.kind === 'list' && typeof raw === 'string') return raw.split(',').map((entry) => entry.trim());
  return raw;
}

/** The effective configuration of `gathered`, secrets redacted. */
export function printedConfig(gathered: Gathered, env: NodeJS.ProcessEnv = process.env): PrintedConfig {
  const fields: Record<string, PrintedValue> = {};
  for (const field of SERVE_FIELDS) {
    const key = field.flag ?? field.name;
    const raw = gathered.values[key];
    if (raw !== undefined) {
      fields[field.name] = { value: typed(field, raw), source: describeSource(gathered.sources.get(key)) };
    } else if (field.meta.default !== undefined) {
      fields[field.name] = { value: field.meta.default, source: 'default' };
    }
  }
  const keys = env.BATON_KEYS?.trim()
    ? { value: REDACTED, source: 'env BATON_KEYS' }
    : { value: 'a random per-process key', source: 'default' };
  return { file: gathered.file ?? null, fields, keys };
}
