/**
 * A flow's input catalog: the single place its input keys, schemas and events
 * are named (`defineInputs`), the typed events the machine receives for it
 * (`InputEvents`), and the state meta that asks for inputs by key (`ask`).
 */
import { FlowDefinitionError } from '../../errors.js';
import type { DecisionSpec } from './decision.js';
import type { EventSpec } from './event.js';
import type { InputEventType, InputSpec, UnsupportedAnswer } from './spec.js';

/** A catalog of inputs a flow may ask, keyed by the request key sent on the wire. */
export type InputCatalog = Record<string, InputSpec<any, any>>;

/** The answer payload a spec delivers, plus `unsupported` for the caller's inputs (when it has a fallback). */
export type AnswerOf<S> = S extends DecisionSpec<any, any> | EventSpec<any, any>
  ? S extends InputSpec<infer A, any>
    ? A
    : never
  : S extends InputSpec<infer A, any>
    ? A | UnsupportedAnswer
    : never;

/**
 * The union of events the machine receives for a catalog: one `input.<key>` event per key.
 *
 * @example
 * ```ts
 * import { defineInputs, form, type InputEvents } from '@baton/engine';
 * import { setup } from 'xstate';
 * import { z } from 'zod';
 *
 * const inputs = defineInputs({ confirm_deploy: form({ message: 'Deploy?', schema: z.object({ confirm: z.boolean() }) }) });
 * setup({ types: { events: {} as InputEvents<typeof inputs> } });
 * // { type: 'input.confirm_deploy', action: 'accept', content: { confirm: boolean } } | …
 * ```
 */
export type InputEvents<TCatalog extends InputCatalog> = {
  [K in keyof TCatalog & string]: { type: InputEventType<K> } & AnswerOf<TCatalog[K]>;
}[keyof TCatalog & string];

const KEY = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * Declare the inputs of a flow. Keys become the `inputRequests` keys on the wire.
 *
 * @throws FlowDefinitionError for keys that are not 1-64 of `[A-Za-z0-9_.-]`.
 */
export function defineInputs<const TCatalog extends InputCatalog>(catalog: TCatalog): TCatalog {
  for (const key of Object.keys(catalog)) {
    if (!KEY.test(key)) throw new FlowDefinitionError(`input key "${key}" must be 1-64 characters of [A-Za-z0-9_.-]`);
  }
  return catalog;
}

/**
 * State meta that asks for inputs of a catalog; type-checks the keys.
 *
 * @example `awaiting: { meta: ask(inputs, 'confirm_deploy', 'change_ticket'), on: { … } }`
 */
export function ask<TCatalog extends InputCatalog, K extends keyof TCatalog & string>(
  _catalog: TCatalog,
  ...keys: K[]
): { ask: K[] } {
  return { ask: keys };
}
