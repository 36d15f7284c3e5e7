/**
 * Conformance fixtures: see `fixtures.ts` for the area this module holds.
 */
import type { FlowExposure } from '@baton/adapters';
import type { Flow } from '@baton/engine';

/** How each fixture of this module is served, by name (a flow not named here is a tool). */
export const exposure: Readonly<Record<string, FlowExposure>> = {};

/** Every fixture of this module. */
export const flows: readonly Flow[] = [];
