/**
 * `baton diagram <flows-module> <flow>`: prints a flow as a Mermaid
 * `stateDiagram-v2` on stdout (paste it into any Mermaid renderer), with the
 * states that ask for input marked and annotated with what they ask.
 */
import { toMermaid } from '@baton/engine';
import { loadFlowsModule } from '../flowsModule.js';
import { CliError, usageError } from './cliError.js';
import { parseFlags } from './parseFlags.js';

/** The command's synopsis, as `--help`, usage errors and the README show it. */
export const USAGE = 'baton diagram <flows-module> <flow>';

/** The flags the command parses (node:util `parseArgs` options); the README documents each. */
export const OPTIONS = { help: { type: 'boolean', short: 'h' } } as const;

/** Run the command; resolves to the exit code. */
export async function run(argv: string[]): Promise<number> {
  const parsed = parseFlags(argv, OPTIONS, USAGE);
  if (parsed.values.help) {
    process.stdout.write(`usage: ${USAGE}\n\nPrint a flow as a Mermaid stateDiagram-v2.\n`);
    return 0;
  }
  const [modulePath, flowName, ...extra] = parsed.positionals;
  if (!modulePath || !flowName || extra.length > 0) throw usageError('expected a flows module and a flow name', USAGE);
  const loaded = await loadFlowsModule(modulePath);
  const flow = loaded.flows.find((f) => f.name === flowName);
  if (!flow) {
    throw new CliError(`no flow "${flowName}" in ${modulePath} (flows: ${loaded.flows.map((f) => f.name).join(', ')})`);
  }
  process.stdout.write(toMermaid(flow));
  return 0;
}
