/**
 * The version of `@baton/adapters`, read once from its package.json: one folder up from this
 * module in `src/` and in `dist/` (the build keeps `src/`'s layout), `undefined` when a bundler
 * moved it. What OpenTelemetry names with it: the scope of the adapters' tracer and meter, and
 * the resource's `service.version` under `baton serve --otlp`. Imports nothing of the package:
 * any folder may use it.
 */
import { createRequire } from 'node:module';

/** `version` of `@baton/adapters`' package.json, or `undefined` when it cannot be read. */
export const ADAPTERS_VERSION: string | undefined = (() => {
  try {
    return (createRequire(import.meta.url)('../package.json') as { version?: string }).version;
  } catch {
    return undefined;
  }
})();
