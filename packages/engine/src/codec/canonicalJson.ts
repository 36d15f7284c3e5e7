/**
 * Deterministic JSON for digests. Two values that `JSON.stringify` would encode
 * the same up to object key order encode to the same string here: object keys
 * are sorted (by UTF-16 code units, recursively), numbers and strings use the
 * exact `JSON.stringify` spelling, and `toJSON` is honoured. It is stricter than
 * JSON where silence would hide a bug in a digest: non-finite numbers, bigints,
 * functions, symbols and cycles throw a `TypeError` instead of turning into
 * `null` or vanishing. As in JSON, `undefined` object properties are dropped
 * and `undefined` array items become `null` (and so does a top-level
 * `undefined`, so an absent argument list digests like `null`). For plain data
 * the output matches RFC 8785 (JCS). It recurses, so it refuses (with a
 * `TypeError`) values nested deeper than {@link MAX_CANONICAL_DEPTH} levels
 * before the call stack could overflow; a runner checks client input against
 * a far lower limit first (`round/clientInput.ts`).
 */

/**
 * How deeply arrays and objects may nest. Well below where Node's default stack overflows
 * (about 2,000 levels of this recursion), so it holds when called from deep in a stack too.
 */
export const MAX_CANONICAL_DEPTH = 512;

/**
 * Encode `value` as canonical JSON.
 * @throws TypeError for non-finite numbers, bigints, functions, symbols, cyclic structures and
 * values nested deeper than {@link MAX_CANONICAL_DEPTH} levels.
 */
export function canonicalJson(value: unknown): string {
  return encode(value, new Set(), 0) ?? 'null';
}

/** Returns `undefined` for values an object property should drop (like JSON). */
function encode(value: unknown, ancestors: Set<object>, depth: number): string | undefined {
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    value = (value as { toJSON: () => unknown }).toJSON();
  }
  switch (typeof value) {
    case 'undefined':
      return undefined;
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`canonicalJson: ${value} is not a JSON number`);
      return JSON.stringify(value);
    case 'object':
      break;
    default:
      throw new TypeError(`canonicalJson: a ${typeof value} is not JSON`);
  }
  if (value === null) return 'null';
  if (ancestors.has(value)) throw new TypeError('canonicalJson: cyclic structure');
  // Checked before recursing: `depth` containers enclose this one.
  if (depth >= MAX_CANONICAL_DEPTH) {
    throw new TypeError(`canonicalJson: nested more than ${MAX_CANONICAL_DEPTH} levels deep`);
  }
  ancestors.add(value);
  let out: string;
  if (Array.isArray(value)) {
    out = `[${value.map((item) => encode(item, ancestors, depth + 1) ?? 'null').join(',')}]`;
  } else {
    const record = value as Record<string, unknown>;
    const members: string[] = [];
    for (const key of Object.keys(record).sort()) {
      const encoded = encode(record[key], ancestors, depth + 1);
      if (encoded !== undefined) members.push(`${JSON.stringify(key)}:${encoded}`);
    }
    out = `{${members.join(',')}}`;
  }
  ancestors.delete(value);
  return out;
}
