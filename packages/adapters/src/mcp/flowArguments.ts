/**
 * A flow's arguments as the SDK sees them. The SDK lists a tool's or prompt's
 * arguments from a Standard Schema and validates calls against it; Baton
 * hands it a schema that lists the flow's zod `args` but accepts any value,
 * so the raw arguments reach the runner byte for byte: the runner validates
 * them (once, on the first round) and binds every state to them. Prompt
 * arguments and resource URI variables are strings on the wire;
 * {@link coerceStringArguments} turns them into the numbers and booleans the
 * flow's schema declares. A flow with its own JSON Schema (`inputSchema`) is
 * listed with that schema, as written.
 */
import type { Flow } from '@baton/engine';
import type { StandardSchemaWithJSON } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { withCachedJsonSchema } from './cachedJsonSchema.js';

const listedByFlow = new WeakMap<Flow, StandardSchemaWithJSON>();

/**
 * The flow's argument schema for listing only: validation passes every value through unchanged.
 * One object per flow, its JSON Schema computed once (`cachedJsonSchema.ts`).
 */
export function listedArguments(flow: Flow): StandardSchemaWithJSON {
  const known = listedByFlow.get(flow);
  if (known) return known;
  const passThrough = (value: unknown) => ({ value: value ?? {} });
  // An author's JSON Schema (`defineFlow({ inputSchema })`) is listed verbatim, keywords zod
  // cannot produce included; `args` still validates in the runner.
  const authored = flow.inputSchema as Record<string, unknown> | undefined;
  const listed: StandardSchemaWithJSON = authored
    ? {
        '~standard': {
          version: 1,
          vendor: 'baton',
          validate: passThrough,
          jsonSchema: { input: () => authored, output: () => authored },
        },
      }
    : withCachedJsonSchema(flow.args as StandardSchemaWithJSON, passThrough);
  listedByFlow.set(flow, listed);
  return listed;
}

const typesByFlow = new WeakMap<Flow, ReadonlyMap<string, string | undefined>>();

/** The JSON Schema type of each top-level argument, by name (computed once per flow). */
export function argumentTypes(flow: Flow): ReadonlyMap<string, string | undefined> {
  const known = typesByFlow.get(flow);
  if (known) return known;
  const schema = z.toJSONSchema(flow.args, { io: 'input', unrepresentable: 'any' }) as {
    properties?: Record<string, { type?: unknown }>;
  };
  const types = new Map(
    Object.entries(schema.properties ?? {}).map(([name, property]) => [
      name,
      typeof property?.type === 'string' ? property.type : undefined,
    ]),
  );
  typesByFlow.set(flow, types);
  return types;
}

/**
 * Turn string values into the number, integer or boolean the flow's schema
 * declares for them; anything else (including values that do not convert)
 * is left for the flow's schema to judge.
 *
 * @example `coerceStringArguments(types, { amount: '120.5', urgent: 'true', note: 'x' })` -> `{ amount: 120.5, urgent: true, note: 'x' }`
 */
export function coerceStringArguments(
  types: ReadonlyMap<string, string | undefined>,
  args: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  const coerced: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(args)) {
    const type = types.get(name);
    if (typeof value !== 'string') coerced[name] = value;
    else if ((type === 'number' || type === 'integer') && value.trim() !== '' && Number.isFinite(Number(value))) {
      coerced[name] = Number(value);
    } else if (type === 'boolean' && (value === 'true' || value === 'false')) coerced[name] = value === 'true';
    else coerced[name] = value;
  }
  return coerced;
}

/** Why `args` do not fit the flow, in the runner's words; `undefined` when they fit. */
export function argumentsProblem(flow: Flow, args: unknown): string | undefined {
  const parsed = flow.args.safeParse(args ?? {});
  if (parsed.success) return undefined;
  const issues = parsed.error.issues.map((i) => `${i.path.join('.') || 'arguments'}: ${i.message}`);
  return `Invalid arguments: ${issues.join('; ')}`;
}
