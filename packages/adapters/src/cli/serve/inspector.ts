/**
 * `--inspect MODULE`: load a module whose default export is an XState inspector (an observer, a
 * function, or an object with `inspect`, as `@statelyai/inspect` creates; its `stop()` is called
 * on exit).
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Inspector } from '@baton/engine';
import { CliError, oneLine } from '../cliError.js';

/** An `--inspect` module's inspector, and how to stop it when it has a `stop()` (Stately's do). */
export interface LoadedInspector {
  readonly inspect: Inspector;
  readonly stop?: () => Promise<void> | void;
}

/**
 * Load `--inspect MODULE`: its default export must be an inspection observer or function, or an
 * object whose `inspect` is one (what `@statelyai/inspect` creates; its `stop()` is called on exit).
 */
export async function loadInspector(specifier: string): Promise<LoadedInspector> {
  const url = pathToFileURL(resolve(process.cwd(), specifier)).href;
  let loaded: { default?: unknown };
  try {
    loaded = await import(url);
  } catch (error) {
    throw new CliError(`cannot load --inspect module ${specifier}: ${oneLine(error)}`);
  }
  const candidate = loaded.default as { inspect?: unknown; stop?: unknown } | undefined;
  const isInspector = (value: unknown): value is Inspector =>
    typeof value === 'function' || (typeof value === 'object' && value !== null && 'next' in value);
  const stop =
    candidate && typeof candidate === 'object' && typeof candidate.stop === 'function'
      ? { stop: () => (candidate.stop as () => Promise<void> | void).call(candidate) }
      : {};
  if (isInspector(candidate)) return { inspect: candidate, ...stop };
  if (candidate && typeof candidate === 'object' && isInspector(candidate.inspect)) {
    // The object itself: the runner uses its `inspect`, and its `flush()` when it has one.
    return { inspect: candidate as Inspector, ...stop };
  }
  throw new CliError(
    `--inspect module ${specifier} must export an inspector (an observer, a function, or an object with "inspect") as default`,
  );
}
