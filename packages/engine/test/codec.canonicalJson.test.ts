import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, MAX_CANONICAL_DEPTH } from '../src/codec/index.js';

/** Rebuild a JSON value with every object's keys in reverse order. */
function reverseKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reverseKeys);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .reverse()
        .map(([k, v]) => [k, reverseKeys(v)]),
    );
  }
  return value;
}

describe('canonicalJson', () => {
  it('sorts object keys recursively and leaves arrays in order', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}',
    );
  });

  it('sorts by UTF-16 code units, like RFC 8785', () => {
    expect(canonicalJson({ é: 1, z: 2, A: 3, '\u{1F600}': 4, '\uFFFF': 5 })).toBe(
      '{"A":3,"z":2,"é":1,"\u{1F600}":4,"\uFFFF":5}',
    );
  });

  it('drops undefined properties and turns undefined array items (and top level) into null', () => {
    expect(canonicalJson({ a: undefined, b: [undefined, 1] })).toBe('{"b":[null,1]}');
    expect(canonicalJson(undefined)).toBe('null');
  });

  it('honours toJSON and writes -0 as 0', () => {
    expect(canonicalJson({ at: new Date(0), n: -0 })).toBe('{"at":"1970-01-01T00:00:00.000Z","n":0}');
  });

  it('rejects what JSON would silently change', () => {
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, [Number.NEGATIVE_INFINITY], 1n, () => 1, Symbol('s')]) {
      expect(() => canonicalJson(bad)).toThrow(TypeError);
    }
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => canonicalJson(cyclic)).toThrow('cyclic');
    const shared = { x: 1 };
    expect(canonicalJson([shared, shared])).toBe('[{"x":1},{"x":1}]');
  });

  it('parses back to the value, and ignores key order (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = canonicalJson(value);
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(value)));
        expect(canonicalJson(reverseKeys(value))).toBe(text);
        expect(canonicalJson(JSON.parse(text))).toBe(text);
      }),
      { numRuns: 500 },
    );
  });
});

describe('canonicalJson on deep input', () => {
  const nest = (levels: number, wrap: (inner: unknown) => unknown) => {
    let value: unknown = 1;
    for (let i = 0; i < levels; i++) value = wrap(value);
    return value;
  };

  it('encodes up to MAX_CANONICAL_DEPTH levels', () => {
    expect(MAX_CANONICAL_DEPTH).toBe(512);
    expect(canonicalJson(nest(512, (v) => [v]))).toBe(`${'['.repeat(512)}1${']'.repeat(512)}`);
    expect(canonicalJson(nest(512, (v) => ({ x: v })))).toBe(`${'{"x":'.repeat(512)}1${'}'.repeat(512)}`);
  });

  it('throws a TypeError, not a stack overflow, past it (10,000 levels)', () => {
    for (const wrap of [(v: unknown) => [v], (v: unknown) => ({ x: v }), (v: unknown) => ({ a: [v] })]) {
      expect(() => canonicalJson(nest(513, wrap))).toThrow(TypeError);
      expect(() => canonicalJson(nest(10_000, wrap))).toThrow(
        new TypeError('canonicalJson: nested more than 512 levels deep'),
      );
    }
  });
});
