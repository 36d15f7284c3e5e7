/**
 * The one model of `baton serve`'s configuration: a zod schema whose fields are named after the
 * flags (`--max-ttl` -> `maxTtl`, environment `BATON_MAX_TTL`). The flag table, the environment
 * names, the type of `defineConfig` (what a `baton.config.ts` may hold), the config file's
 * validation and `--print-config` all derive from it ({@link SERVE_FIELDS}). A field's value type
 * in the file is its kind: `string`, `number`, `boolean`, or a list (`string[]`; on the command
 * line and in the environment, comma-separated). Inline secrets (`notifySecret`, `eventSecret`)
 * are flags and environment variables only: the file refuses them and says to use the `...File`
 * form or the environment. `flows` has no flag: the positional argument is its flag.
 */
import { DEFAULT_MAX_TTL_SECONDS } from '@baton/engine';
import { z } from 'zod';

/** What a field says beyond its type. */
export interface FieldMeta {
  /** One line for `--print-config` and the docs. */
  readonly description: string;
  /** The environment variable, when not `BATON_` + the field in SCREAMING_SNAKE_CASE. */
  readonly env?: string;
  /** Shown as `[redacted]` (`url`: only the password of a URL). */
  readonly secret?: true | 'url';
  /** A path: in the file, relative to the file's folder. */
  readonly path?: true;
  /** The default `--print-config` shows (the engine's own, applied where it is used). */
  readonly default?: string | number | boolean;
  /** A flag that may be given several times (its values in order). */
  readonly multiple?: true;
  /** No flag of its own (`flows`: the positional argument). */
  readonly noFlag?: true;
  /** The kind of an inline secret, refused in the file (its schema there is `never`). */
  readonly inline?: 'string' | 'list';
}

const fields = z.registry<FieldMeta>();

/** A field of the file: optional, with its metadata. */
function field<T extends z.ZodType>(schema: T, meta: FieldMeta): z.ZodOptional<T> {
  const optional = schema.optional();
  fields.add(optional as z.ZodType, meta);
  return optional;
}

/** An inline secret: a flag or an environment variable, never a value in the config file. */
const inlineSecret = (file: string, env: string, kind: 'string' | 'list', description: string) =>
  z
    .never({ error: `a secret does not belong in the config file: use ${file} (a file) or the environment ${env}` })
    .optional()
    .register(fields, { description, secret: true, inline: kind, env, ...(kind === 'list' ? { multiple: true } : {}) });

/**
 * The configuration of `baton serve`, as `baton.config.ts`, the `BATON_*` environment and the
 * flags give it (precedence flag > environment > file).
 */
export const serveConfigSchema = z.strictObject({
  flows: field(z.string().min(1), {
    description: 'the flows module (the positional argument wins)',
    path: true,
    noFlag: true,
  }),
  http: field(z.string(), { description: 'HOST:PORT: stateless Streamable HTTP at /mcp' }),
  stdio: field(z.boolean(), { description: 'serve over stdio' }),
  ledger: field(z.string(), { description: 'sqlite:PATH, postgres://... or memory:', secret: 'url' }),
  ttl: field(z.number(), { description: 'lifetime of a requestState, seconds', default: 1800 }),
  maxTtl: field(z.number(), {
    description: 'longest lifetime of any state, seconds',
    default: DEFAULT_MAX_TTL_SECONDS,
  }),
  authTokens: field(z.string(), { description: 'JSON file: bearer token -> principal', path: true }),
  roles: field(z.array(z.string()), { description: "the local user's roles over stdio" }),
  waitInCall: field(z.number(), { description: 'how long one call waits, seconds', default: 20 }),
  taskPoll: field(z.number(), { description: 'poll interval of a task waiting on a person, seconds', default: 5 }),
  notifyWebhook: field(z.string(), { description: 'POST notifications to this URL' }),
  notifyPrincipals: field(z.enum(['hash', 'id']), { description: 'how webhooks name principals', default: 'hash' }),
  notifySecret: inlineSecret(
    'notifySecretsFile',
    'BATON_NOTIFY_SECRET',
    'string',
    'Standard Webhooks secrets that sign webhooks, comma-separated',
  ),
  notifySecretsFile: field(z.string(), { description: 'file: one webhook secret per line', path: true }),
  eventSecret: inlineSecret(
    'eventSecretsFile',
    'BATON_EVENT_SECRETS',
    'list',
    'NAME=whsec_... secrets of POST /events/NAME (environment: comma-separated)',
  ),
  eventSecretsFile: field(z.string(), { description: 'file: one NAME=whsec_... per line', path: true }),
  publicUrl: field(z.string(), { description: "this server's external base URL" }),
  otlp: field(z.string(), { description: 'export OpenTelemetry traces over OTLP/HTTP to this URL', secret: 'url' }),
  noScheduler: field(z.boolean(), { description: 'fire no durable timers on this instance' }),
  storePrincipalNames: field(z.boolean(), { description: 'store readable principal ids in the ledger' }),
  audit: field(z.boolean(), { description: 'record an audit entry per round (needs ledger)' }),
  inspect: field(z.string(), { description: 'module exporting an XState inspector', path: true }),
  allowReplays: field(z.boolean(), { description: 'serve durable steps without a ledger' }),
  roundBudget: field(z.number(), { description: "time budget of a round's invoked work, ms", default: 10_000 }),
  oauthIssuer: field(z.string(), { description: 'accept access tokens of this OAuth issuer' }),
  oauthAudience: field(z.string(), { description: 'the resource URL tokens must name in aud' }),
  rolesClaim: field(z.string(), { description: 'claim holding roles or groups', default: 'roles' }),
  principalClaim: field(z.string(), { description: 'claim naming the account', default: 'sub' }),
  groupRoles: field(z.string(), { description: 'JSON file: group -> role or [roles]', path: true }),
  introspectionClient: field(z.string(), { description: 'JSON file: client_id and client_secret', path: true }),
  loginClientId: field(z.string(), { description: "this server's web client at the issuer (decision pages)" }),
  loginClientSecretFile: field(z.string(), { description: "file: that client's secret", path: true }),
});

/**
 * What a `baton.config.ts` holds: every field optional, named after the flag (`--max-ttl` ->
 * `maxTtl`), numbers as numbers, lists as arrays; secrets only as files (`notifySecretsFile`).
 */
export type BatonConfig = z.input<typeof serveConfigSchema>;

/** A field name of {@link BatonConfig}. */
export type ServeField = keyof BatonConfig;

/** What kind of value a field takes, from its schema. */
export type FieldKind = 'string' | 'number' | 'boolean' | 'list';

/** One field of the model, with everything derived from it. */
export interface ServeFieldSpec {
  readonly name: ServeField;
  /** `--max-ttl` without the dashes; `undefined` for `flows`. */
  readonly flag?: string;
  readonly env: string;
  readonly kind: FieldKind;
  readonly meta: FieldMeta;
  readonly schema: z.ZodType;
}

/** `maxTtl` -> `max-ttl`. */
export const kebab = (name: string): string => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

function kindOf(schema: z.ZodType, meta: FieldMeta): FieldKind {
  if (meta.inline) return meta.inline;
  const inner = schema instanceof z.ZodOptional ? (schema.unwrap() as z.ZodType) : schema;
  if (inner instanceof z.ZodBoolean) return 'boolean';
  if (inner instanceof z.ZodNumber) return 'number';
  if (inner instanceof z.ZodArray) return 'list';
  return 'string';
}

/** Every field of the model, in the schema's order. */
export const SERVE_FIELDS: readonly ServeFieldSpec[] = Object.entries(serveConfigSchema.shape).map(([name, schema]) => {
  const meta = fields.get(schema)!;
  return {
    name: name as ServeField,
    ...(meta.noFlag ? {} : { flag: kebab(name) }),
    env: meta.env ?? `BATON_${name.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`,
    kind: kindOf(schema, meta),
    meta,
    schema,
  };
});

/** The field a flag sets (`max-ttl` -> its spec). */
export const FIELD_BY_FLAG: ReadonlyMap<string, ServeFieldSpec> = new Map(
  SERVE_FIELDS.filter((f) => f.flag).map((f) => [f.flag!, f]),
);

/**
 * Type a `baton.config.ts`: `export default defineConfig({ ... })`. The same fields as the
 * flags of `baton serve`, in camelCase (`--max-ttl` -> `maxTtl`); the environment (`BATON_MAX_TTL`)
 * and the flags override the file. Secrets go in files (`notifySecretsFile`) or the environment,
 * never in the config file; relative paths are relative to the file.
 *
 * @example
 * ```ts
 * // baton.config.ts
 * import { defineConfig } from '@baton/adapters';
 *
 * export default defineConfig({
 *   flows: './flows.ts',
 *   http: '127.0.0.1:3000',
 *   ledger: 'sqlite:./baton.db',
 *   maxTtl: 7 * 86_400,
 * });
 * ```
 */
export function defineConfig(config: BatonConfig): BatonConfig {
  return config;
}
