import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeValue, dictionaryOf, encodeValue, MAX_VALUE_DEPTH } from '../src/codec/compactValue.js';
import { InvalidRequestStateError } from '../src/errors.js';
import { BINDING, CLAIMS, makeCodec, rejection } from './codec.fixtures.js';

const dictionary = dictionaryOf('deploy_production', { version: '1.2.3', tags: ['blue', 'green'] });
const roundTrip = (value: unknown, dict = dictionary) => decodeValue(encodeValue(value, dict), dict);
const asJson = (value: unknown) => JSON.parse(JSON.stringify(value));

/** Whether decoding `bytes` either returns a value or throws InvalidRequestStateError('malformed'), nothing else. */
function decodesOrRefuses(bytes: Uint8Array): boolean {
  try {
    decodeValue(bytes, dictionary);
    return true;
  } catch (error) {
    return error instanceof InvalidRequestStateError && error.reason === 'malformed';
  }
}

describe('compact value encoding', () => {
  it('round-trips arbitrary JSON with JSON semantics, whatever the dictionary', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string(), fc.jsonValue(), (value, flow, args) => {
        const dict = dictionaryOf(flow, args);
        expect(roundTrip(value, dict)).toEqual(asJson(value));
      }),
      { numRuns: 500 },
    );
  });

  it('round-trips strings with lone surrogates exactly (UTF-8 could not carry them)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' }), (binary, grapheme) => {
        expect(roundTrip({ [binary]: binary, g: grapheme })).toEqual({ [binary]: binary, g: grapheme });
      }),
      { numRuns: 300 },
    );
    expect(roundTrip('\ud800x\udfff')).toBe('\ud800x\udfff');
  });

  it('keeps a "__proto__" key an own property, never a prototype', () => {
    const value = JSON.parse('{"__proto__": {"polluted": true}, "a": {"__proto__": [1]}}');
    const decoded = roundTrip(value) as Record<string, unknown>;
    expect(Object.getPrototypeOf(decoded)).toBe(Object.prototype);
    expect(Object.hasOwn(decoded, '__proto__')).toBe(true);
    expect((decoded as { polluted?: unknown }).polluted).toBeUndefined();
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
    expect(JSON.stringify(decoded)).toBe(JSON.stringify(value));
  });

  it('follows JSON for toJSON, undefined, -0 and sparse arrays, and refuses what JSON cannot carry', () => {
    const date = new Date(0);
    const sparse = [undefined, undefined, -0];
    delete sparse[1];
    expect(roundTrip({ at: date, gone: undefined, f: () => 1, list: sparse })).toEqual({
      at: date.toISOString(),
      list: [null, null, 0],
    });
    expect(() => encodeValue(Number.NaN, dictionary)).toThrow(TypeError);
    expect(() => encodeValue({ big: 1n }, dictionary)).toThrow(TypeError);
    expect(() => encodeValue(() => 1, dictionary)).toThrow(/not a JSON value/);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => encodeValue(cyclic, dictionary)).toThrow(/cyclic/);
    let deep: unknown = 1;
    for (let i = 0; i <= MAX_VALUE_DEPTH; i++) deep = [deep];
    expect(() => encodeValue(deep, dictionary)).toThrow(/nests past/);
  });

  it('stores strings the binding holds as references, and XState after ids without their prefix and flow', () => {
    const plain = encodeValue({ version: '1.2.3' }, dictionaryOf('x', {}));
    const referenced = encodeValue({ version: '1.2.3' }, dictionary);
    expect(referenced.length).toBe(3); // tag, key reference, value reference
    expect(referenced.length).toBeLessThan(plain.length);
    const id = 'xstate.after.900000.deploy_production.awaitingApproval';
    const after = encodeValue(id, dictionary);
    expect(after.length).toBeLessThan(id.length - 25);
    expect(decodeValue(after, dictionary)).toBe(id);
    // A flow name that is not in the id: stored as it is.
    expect(roundTrip('xstate.after.900000.other_flow.waiting')).toBe('xstate.after.900000.other_flow.waiting');
  });

  it('refers back to a string the value already holds, and to the words of MCP answers', () => {
    const held = { h: { confirm_deploy: { action: 'accept', content: { confirm: true } } } };
    // A literal's 16 bytes the first time, a 1-byte reference after; static words are references.
    const twice = encodeValue(['awaitingApproval', 'awaitingApproval'], dictionary);
    expect(twice.length).toBe(1 + 17 + 1);
    expect(decodeValue(twice, dictionary)).toEqual(['awaitingApproval', 'awaitingApproval']);
    expect(encodeValue(held, dictionary).length).toBeLessThan(JSON.stringify(held).length / 2);
    expect(roundTrip(held)).toEqual(held);
    // Repeats of every kind (keys, values, UTF-16 strings, after-id parts) in any order.
    const word = fc.constantFrom('abc', 'abcd', '\ud800ab', 'é-deux', 'xstate.after.5.deploy_production.abc', 'ab');
    const value = fc.letrec((tie) => ({
      node: fc.oneof(word, fc.array(tie('node'), { maxLength: 6 }), fc.dictionary(word, tie('node'), { maxKeys: 4 })),
    })).node;
    fc.assert(
      fc.property(value, (v) => {
        expect(roundTrip(v)).toEqual(v);
      }),
      { numRuns: 500 },
    );
  });

  it('builds the same dictionary whatever the key order of the arguments', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 8 }), (args) => {
        const reversed = Object.fromEntries(Object.entries(args).reverse());
        expect(dictionaryOf('f', reversed).strings).toEqual(dictionaryOf('f', args).strings);
      }),
      { numRuns: 200 },
    );
  });

  it('refuses random bytes with malformed, never another error', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        expect(decodesOrRefuses(bytes)).toBe(true);
      }),
      { numRuns: 5000 },
    );
  });

  it('refuses every truncation and bit flip of an encoded value with malformed, or decodes it', () => {
    const bytes = encodeValue(
      { s: ['awaitingApproval', { version: '1.2.3', plan: 'p'.repeat(80), n: [1, -7, 2.5, 2 ** 40] }] },
      dictionary,
    );
    for (let length = 0; length < bytes.length; length++) {
      expect(rejection(() => decodeValue(bytes.subarray(0, length), dictionary))).toBe('malformed');
    }
    for (let bit = 0; bit < bytes.length * 8; bit++) {
      const flipped = Buffer.from(bytes);
      flipped[bit >> 3]! ^= 1 << (bit & 7);
      expect(decodesOrRefuses(flipped)).toBe(true);
    }
  });

  it('refuses lengths and counts past the bytes left before allocating, and deep nesting', () => {
    // An array of 2^50 items in 9 bytes; an object of 2^40 members; a string of 2^45 bytes.
    expect(
      rejection(() => decodeValue(Buffer.from([0x07, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02]), dictionary)),
    ).toBe('malformed');
    expect(rejection(() => decodeValue(Buffer.from([0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20]), dictionary))).toBe(
      'malformed',
    );
    expect(
      rejection(() => decodeValue(Buffer.from([0x06, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x08]), dictionary)),
    ).toBe('malformed');
    // 100,000 nested one-item arrays, and a chain of 100,000 after-id tags: refused, no stack overflow.
    expect(rejection(() => decodeValue(Buffer.alloc(100_000, 0xc1), dictionary))).toBe('malformed');
    expect(rejection(() => decodeValue(Buffer.alloc(100_000, 0x0b), dictionary))).toBe('malformed');
    // Overlong varints, unknown references, reserved tags, trailing bytes, invalid UTF-8.
    for (const bad of [[0x04, 0x80, 0x00], [0x3f], [0x09, 0x7f], [0x0c], [0x40, 0x40], [0x82, 0xc3, 0x28]]) {
      expect(rejection(() => decodeValue(Buffer.from(bad), dictionary))).toBe('malformed');
    }
  });
});

describe('requestState codec over random payloads', () => {
  it.each(['sealed', 'signed'] as const)('%s: round-trips arbitrary bodies under arbitrary arguments', (mode) => {
    const { codec } = makeCodec({ mode });
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), fc.string({ minLength: 1 }), (body, args, flow) => {
        const binding = { ...BINDING, flow, args };
        const { token, claims } = codec.mint(binding, { ...CLAIMS, body });
        expect(codec.open(token, binding)).toEqual({ ...claims, body: asJson(body) });
      }),
      { numRuns: 300 },
    );
  });
});
