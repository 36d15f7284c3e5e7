/**
 * What `baton call` checks before it calls: that the server has the tool
 * (else the tools it has, with commander's suggestion for a near miss) and
 * that every key of `--args` is an argument the tool's input schema declares.
 * An undeclared key is refused in the schema's own words (its argument names
 * and their descriptions), since a flow's schema drops it unseen; a schema
 * that allows other keys (`additionalProperties` true or a schema) gets a
 * warning instead. A server that cannot list its tools is not checked.
 */
import { type Client, type Tool, UnauthorizedError } from '@modelcontextprotocol/client';
import { CliError, EXIT_USAGE } from './cliError.js';
import { nearMiss } from './parseFlags.js';

/** What the check found: an error that stops the call, or a warning to print before it. */
export type ToolCheck =
  | { readonly error: CliError; readonly warning?: never }
  | { readonly warning: string; readonly error?: never };

/**
 * Every tool the server lists, as listed (following `nextCursor`, at most 20 pages). The SDK
 * leaves out a tool whose `x-mcp-header` declarations are invalid (SEP-2243), saying so on stderr.
 */
export async function listAllTools(client: Client): Promise<Tool[]> {
  const tools: Tool[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 20; page++) {
    const listed = await client.listTools(cursor === undefined ? undefined : { cursor });
    tools.push(...listed.tools);
    cursor = listed.nextCursor;
    if (cursor === undefined) break;
  }
  return tools;
}

/**
 * `listAllTools`, or `undefined` when listing fails; but a sign-in the SDK has begun
 * (`UnauthorizedError`) is thrown, for the caller to finish it.
 */
async function listTools(client: Client): Promise<Tool[] | undefined> {
  try {
    return await listAllTools(client);
  } catch (error) {
    if (error instanceof UnauthorizedError) throw error;
    return undefined;
  }
}

/** `"a" (did you mean "b"?)`-style hint for `word`, or `''`. */
function didYouMean(word: string, candidates: readonly string[]): string {
  const suggestion = nearMiss(word, candidates);
  return suggestion ? `: did you mean ${suggestion}?` : '';
}

/**
 * Check `tool` and the keys of `args` against what the server lists.
 * @returns `undefined` when all is well (or the server cannot list its tools).
 */
export async function checkToolCall(
  client: Client,
  tool: string,
  args: Readonly<Record<string, unknown>>,
  where: string,
): Promise<ToolCheck | undefined> {
  const tools = await listTools(client);
  if (!tools) return undefined;
  const found = tools.find((t) => t.name === tool);
  const names = tools.map((t) => t.name);
  if (!found) {
    const list = names.length > 0 ? `tools: ${names.join(', ')}` : 'it lists no tools';
    return { error: new CliError(`${where} has no tool "${tool}"${didYouMean(tool, names)} (${list})`) };
  }
  const schema = found.inputSchema as {
    properties?: Record<string, { description?: unknown }>;
    additionalProperties?: unknown;
  };
  const declared = Object.keys(schema.properties ?? {});
  const unknown = Object.keys(args).filter((key) => !declared.includes(key));
  if (unknown.length === 0) return undefined;
  const described = declared.map((name) => {
    const description = schema.properties?.[name]?.description;
    return typeof description === 'string' && description !== '' ? `${name} (${description})` : name;
  });
  const takes = declared.length > 0 ? `${tool} takes ${described.join(', ')}` : `${tool} takes no arguments`;
  const keys = unknown.map((key) => `"${key}"${didYouMean(key, declared)}`).join('; ');
  const extra = schema.additionalProperties;
  if (extra === true || (typeof extra === 'object' && extra !== null)) {
    return { warning: `${tool} does not declare the argument ${keys}; sending it anyway (${takes})` };
  }
  return {
    error: new CliError(`${tool} has no argument ${keys} (${takes}); fix --args`, EXIT_USAGE),
  };
}
