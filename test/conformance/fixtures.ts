/**
 * The flows module that `scripts/conformance.ts` serves (`baton serve
 * test/conformance/fixtures.ts`) for the official MCP conformance suite
 * (`@modelcontextprotocol/conformance` 0.2.0-alpha.12): a Baton flow, prompt or
 * resource for every fixture a server scenario names. One module per area of
 * the suite, each exporting `flows` and `exposure` (how each flow is served, by
 * name; a flow not named there is a tool):
 *
 * - `mrtr.ts`: the 14 `input-required-result-*` scenarios (SEP-2322);
 * - `content.ts`: tools, prompts, resources and completions of the core scenarios;
 * - `tasks.ts`: the Tasks extension's scenarios (`tasks-*`);
 * - `stateless.ts`: `server-stateless`, `caching` and the custom-header scenarios.
 */

import type { FlowExposure } from '@baton/adapters';
import type { Flow } from '@baton/engine';
import * as content from './content.js';
import * as mrtr from './mrtr.js';
import * as stateless from './stateless.js';
import * as tasks from './tasks.js';

const areas = [mrtr, content, tasks, stateless];

const exposures: Readonly<Record<string, FlowExposure>> = Object.assign({}, ...areas.map((area) => area.exposure));

/** Which MCP methods serve each flow (the `expose` convention of `baton serve`'s flows modules). */
export const expose = (flow: { name: string }): FlowExposure => exposures[flow.name] ?? { tool: true };

/** Every fixture of every area. */
const all: readonly Flow[] = areas.flatMap((area) => area.flows as readonly Flow[]);
export default all;
