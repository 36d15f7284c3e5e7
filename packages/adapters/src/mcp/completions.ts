/**
 * A flow's argument completers (`defineFlow({ complete })`) on the SDK's own
 * `completion/complete` machinery, so they answer beside anything else
 * registered on the server: a prompt's are attached to its listed argument
 * schema as `completable` fields (the SDK reads a prompt's completers from the
 * schema's `shape`), a resource template's are its template's `complete`
 * callbacks. The SDK declares the `completions` capability once either exists.
 *
 * Wire: `completion/complete { ref: { type: 'ref/prompt', name }, argument: { name, value } }` ->
 * `{ completion: { values: [...], total, hasMore } }` (at most 100 values).
 */
import type { ArgumentCompleter, Flow } from '@baton/engine';
import {
  type CompleteResourceTemplateCallback,
  completable,
  type StandardSchemaWithJSON,
} from '@modelcontextprotocol/server';
import { z } from 'zod';

/** A completer as the SDK calls it (context optional, arrays mutable). */
function sdkCallback(completer: ArgumentCompleter): CompleteResourceTemplateCallback {
  return async (value, context) => [...(await completer(value, { arguments: context?.arguments ?? {} }))];
}

/** The SDK callbacks of a flow's completers, by argument name (a resource template's `complete`). */
export function completeCallbacks(flow: Flow): Record<string, CompleteResourceTemplateCallback> | undefined {
  const entries = Object.entries(flow.completers);
  if (entries.length === 0) return undefined;
  return Object.fromEntries(entries.map(([name, completer]) => [name, sdkCallback(completer)]));
}

/**
 * `listed` (a prompt's argument schema) with the flow's completers where the SDK's prompt
 * completion looks for them: `shape[name]`, a `completable` field. Listing and validation stay
 * `listed`'s own. Without completers, `listed` itself.
 */
export function withCompleters(flow: Flow, listed: StandardSchemaWithJSON): StandardSchemaWithJSON {
  const callbacks = completeCallbacks(flow);
  if (!callbacks) return listed;
  const shape = Object.fromEntries(
    Object.entries(callbacks).map(([name, callback]) => [name, completable(z.string(), callback)]),
  );
  return { ...listed, shape } as StandardSchemaWithJSON;
}
