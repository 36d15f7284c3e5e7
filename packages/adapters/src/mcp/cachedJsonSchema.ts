/**
 * A Standard Schema whose JSON Schema conversions are computed once. A
 * stateless server builds a fresh `McpServer` per request, and the SDK
 * converts a tool's input schema to JSON Schema afresh on every server that
 * needs it (every `tools/call`, for the HTTP entry's parameter checks, and
 * every `tools/list`); Baton's schemas never change, so the first conversion
 * per target is kept and handed out again. Validation is the schema's own,
 * or the one given.
 */
import type { StandardSchemaWithJSON } from '@modelcontextprotocol/server';

type Converter = StandardSchemaWithJSON['~standard']['jsonSchema']['input'];
type Validate<I, O> = StandardSchemaWithJSON<I, O>['~standard']['validate'];

/** `convert` remembered per JSON Schema target (calls with library options are not remembered). */
function remembered(convert: Converter): Converter {
  const byTarget = new Map<string, Record<string, unknown>>();
  return (options) => {
    if (options.libraryOptions !== undefined) return convert(options);
    let json = byTarget.get(options.target);
    if (!json) {
      json = convert(options);
      byTarget.set(options.target, json);
    }
    return json;
  };
}

/**
 * `schema` with its JSON Schema conversions remembered, and `validate` in place of its own when given.
 *
 * @example `server.registerTool('t', { inputSchema: withCachedJsonSchema(z.object({ id: z.string() })) }, cb)`
 */
export function withCachedJsonSchema<I, O>(
  schema: StandardSchemaWithJSON<I, O>,
  validate?: Validate<I, O>,
): StandardSchemaWithJSON<I, O> {
  const standard = schema['~standard'];
  return {
    '~standard': {
      version: standard.version,
      vendor: standard.vendor,
      ...(standard.types ? { types: standard.types } : {}),
      validate: validate ?? ((value, options) => standard.validate(value, options)),
      jsonSchema: {
        input: remembered((options) => standard.jsonSchema.input(options)),
        output: remembered((options) => standard.jsonSchema.output(options)),
      },
    },
  };
}
