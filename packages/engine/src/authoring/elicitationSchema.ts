/**
 * Converts an author's zod object schema into the restricted JSON Schema that
 * MCP form elicitation allows (a flat object of primitive properties: string,
 * number, integer, boolean, single- and multi-select enums). Shapes it cannot
 * express (nested objects, unions, tuples, free arrays, records) fail here,
 * when the flow is defined, never at run time. Responses are still validated
 * with the original zod schema, so refinements the wire schema cannot carry
 * (patterns, custom checks) are enforced on the way back in.
 */
import { z } from 'zod';
import type { ElicitationProperty, ElicitationSchema } from '../contract/wire.js';
import { FlowDefinitionError } from '../errors.js';

const COMMON = ['title', 'description', 'default'] as const;
const STRING_KEYS = [...COMMON, 'minLength', 'maxLength', 'format', 'enum', 'oneOf', 'enumNames'] as const;
const NUMBER_KEYS = [...COMMON, 'minimum', 'maximum'] as const;
const ARRAY_KEYS = [...COMMON, 'minItems', 'maxItems', 'items'] as const;
const FORMATS = new Set(['email', 'uri', 'date', 'date-time']);

function pick(source: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of keys) if (source[key] !== undefined) out[key] = source[key];
  return out;
}

function isStringEnum(values: unknown): values is string[] {
  return Array.isArray(values) && values.length > 0 && values.every((v) => typeof v === 'string');
}

function convertProperty(name: string, raw: Record<string, unknown>): ElicitationProperty {
  const fail = (why: string): never => {
    throw new FlowDefinitionError(`form field "${name}" cannot be sent as an elicitation form: ${why}`);
  };
  const type = raw.type;
  if (raw.anyOf || raw.allOf || Array.isArray(type) || (raw.oneOf && type !== 'string')) {
    return fail('unions are not allowed (use z.enum for choices)');
  }
  if (type === 'string') {
    const prop = pick(raw, STRING_KEYS) as ElicitationProperty;
    prop.type = 'string';
    if (prop.format !== undefined && !FORMATS.has(String(prop.format))) {
      fail(`string format "${String(prop.format)}" is not one of email, uri, date, date-time`);
    }
    if (prop.enum !== undefined && !isStringEnum(prop.enum)) fail('enum values must be strings');
    return prop;
  }
  if (type === 'number' || type === 'integer') {
    return { ...pick(raw, NUMBER_KEYS), type } as ElicitationProperty;
  }
  if (type === 'boolean') return { ...pick(raw, COMMON), type: 'boolean' };
  if (type === 'array') {
    const items = raw.items as Record<string, unknown> | undefined;
    if (items?.type !== 'string' || !isStringEnum(items.enum)) {
      fail('arrays must be multi-select lists of string enum values (z.array(z.enum([...])))');
    }
    const prop = pick(raw, ARRAY_KEYS) as ElicitationProperty;
    prop.type = 'array';
    prop.items = { type: 'string', enum: items!.enum };
    return prop;
  }
  if (type === 'object') return fail('nested objects are not allowed (forms are flat)');
  return fail(`type ${JSON.stringify(type ?? 'unknown')} is not a primitive`);
}

/**
 * Convert a zod object schema to a restricted elicitation schema.
 *
 * @throws FlowDefinitionError when the schema is not a flat object of primitives.
 */
export function toElicitationSchema(schema: z.ZodType): ElicitationSchema {
  if (!(schema instanceof z.ZodObject)) {
    throw new FlowDefinitionError('a form schema must be a z.object({...}) of primitive fields');
  }
  let json: Record<string, unknown>;
  try {
    json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'throw' }) as Record<string, unknown>;
  } catch (error) {
    throw new FlowDefinitionError(`form schema cannot be expressed as JSON Schema: ${(error as Error).message}`);
  }
  const properties: Record<string, ElicitationProperty> = {};
  for (const [name, raw] of Object.entries((json.properties ?? {}) as Record<string, Record<string, unknown>>)) {
    properties[name] = convertProperty(name, raw);
  }
  const required = Array.isArray(json.required) ? (json.required as string[]) : [];
  return required.length > 0 ? { type: 'object', properties, required } : { type: 'object', properties };
}
