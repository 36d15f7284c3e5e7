/**
 * Two copies of `@baton/engine` in one process. A flows module loaded as
 * CommonJS (a `.ts` or `.js` file in a package without `"type": "module"`,
 * through tsx) gets its own copy of the engine beside the one `baton serve`
 * runs: its `defineFlow`, `step()` and `FlowError` come from the copy the
 * runner does not use. The copies work together: every marker one copy reads
 * on what the other made is a process-global `Symbol.for('baton.…')` (the step
 * executor, a step's declaration, a flow's replayable mark), and the engine's
 * error classes answer `instanceof` by such a brand instead of by prototype
 * identity. What they hand each other (a `Flow`, a step declaration, the step
 * executor) is a contract, numbered {@link COPY_PROTOCOL}: each copy records
 * itself in a process-global registry when it loads, and a copy whose
 * protocol differs from one already loaded (two incompatible versions
 * installed side by side) refuses to load, with one line naming both paths.
 */

/**
 * The version of what copies hand each other: the shape of `Flow`, `StepDeclaration` and the
 * step executor, and the brands below. Raise it with any change to those.
 */
export const COPY_PROTOCOL = 1;

/** One loaded copy, as recorded in the registry. */
interface LoadedCopy {
  readonly url: string;
  readonly protocol: number;
}

const REGISTRY = Symbol.for('baton.engine.copies');

/**
 * Record the copy loaded from `url`; throws (one line, both paths) when a copy with another
 * protocol is already loaded.
 */
export function registerCopy(url: string): void {
  const global = globalThis as { [REGISTRY]?: LoadedCopy[] };
  global[REGISTRY] ??= [];
  const loaded = global[REGISTRY];
  const other = loaded.find((copy) => copy.protocol !== COPY_PROTOCOL);
  if (other) {
    throw new Error(
      `@baton/engine is loaded twice in versions that cannot work together: ${where(other.url)} (protocol ${other.protocol}) and ${where(url)} (protocol ${COPY_PROTOCOL}); install one version (npm ls @baton/engine)`,
    );
  }
  if (!loaded.some((copy) => copy.url === url)) loaded.push({ url, protocol: COPY_PROTOCOL });
}

/** A file URL as a path, anything else as it is. */
function where(url: string): string {
  return url.startsWith('file://') ? decodeURIComponent(new URL(url).pathname) : url;
}

/**
 * Make `value instanceof cls` hold for instances of `cls` made by any copy of the engine: a
 * `Symbol.for` brand on the prototype (inherited by subclasses' instances) answers it. A subclass
 * keeps the ordinary check (`instanceof MyError` is prototype identity).
 */
export function brandAcrossCopies(cls: abstract new (...args: never[]) => object, name: string): void {
  const brand = Symbol.for(`baton.${name}`);
  Object.defineProperty(cls.prototype, brand, { value: true });
  Object.defineProperty(cls, Symbol.hasInstance, {
    value(this: unknown, value: unknown): boolean {
      if (this !== cls) return Function.prototype[Symbol.hasInstance].call(this, value);
      return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[brand] === true;
    },
  });
}

registerCopy(import.meta.url);
