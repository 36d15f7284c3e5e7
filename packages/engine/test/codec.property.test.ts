import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { INVALID_REQUEST_STATE_MESSAGE, InvalidRequestStateError } from '../src/errors.js';
import { BINDING, CLAIMS, makeCodec, rejection } from './codec.fixtures.js';

const MODES = ['sealed', 'signed'] as const;

/** Whether `fn` throws an InvalidRequestStateError with the fixed message (and nothing else). */
function rejectsOpaquely(fn: () => unknown): boolean {
  try {
    fn();
    return false;
  } catch (error) {
    return error instanceof InvalidRequestStateError && error.message === INVALID_REQUEST_STATE_MESSAGE;
  }
}

describe.each(MODES)('requestState codec properties, %s mode', (mode) => {
  const { codec } = makeCodec({ mode });

  it('round-trips arbitrary JSON bodies and arguments', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (body, args) => {
        const binding = { ...BINDING, args };
        const { token, claims } = codec.mint(binding, { ...CLAIMS, body });
        // Bodies travel as JSON: -0 comes back as 0, everything else as it went.
        expect(codec.open(token, binding)).toEqual({ ...claims, body: JSON.parse(JSON.stringify(body)) });
      }),
      { numRuns: 300 },
    );
  });

  it('accepts arguments with keys in any order', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 8 }), (args) => {
        const { token } = codec.mint({ ...BINDING, args }, CLAIMS);
        const reversed = Object.fromEntries(Object.entries(args).reverse());
        expect(codec.open(token, { ...BINDING, args: reversed }).fid).toBe(CLAIMS.fid);
      }),
      { numRuns: 100 },
    );
  });

  it('rejects every single-bit flip of a realistic token', () => {
    const { token } = codec.mint(BINDING, CLAIMS);
    const bytes = Buffer.from(token, 'base64url');
    const reasons = new Set<string>();
    for (let bit = 0; bit < bytes.length * 8; bit++) {
      const flipped = Buffer.from(bytes);
      flipped[bit >> 3]! ^= 1 << (bit & 7);
      reasons.add(rejection(() => codec.open(flipped.toString('base64url'), BINDING)));
    }
    // The header bytes fail on their own checks; everything after them on integrity.
    expect([...reasons].sort()).toEqual(['bad_integrity', 'malformed', 'unknown_key', 'unsupported_version']);
    expect(codec.open(token, BINDING).fid).toBe(CLAIMS.fid);
  });

  it('rejects every truncation of a realistic token, on the wire and in bytes', () => {
    const { token } = codec.mint(BINDING, CLAIMS);
    for (let length = 0; length < token.length; length++) {
      expect(rejectsOpaquely(() => codec.open(token.slice(0, length), BINDING))).toBe(true);
    }
    const bytes = Buffer.from(token, 'base64url');
    for (let length = 0; length < bytes.length; length++) {
      expect(rejectsOpaquely(() => codec.open(bytes.subarray(0, length).toString('base64url'), BINDING))).toBe(true);
    }
  });

  it('rejects a realistic token with bytes appended', () => {
    const { token } = codec.mint(BINDING, CLAIMS);
    const bytes = Buffer.from(token, 'base64url');
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 64 }), (tail) => {
        expect(rejectsOpaquely(() => codec.open(Buffer.concat([bytes, tail]).toString('base64url'), BINDING))).toBe(
          true,
        );
      }),
    );
  });

  it('rejects random strings, random base64url and random bytes behind a valid header', () => {
    const header = Buffer.from(codec.mint(BINDING, CLAIMS).token, 'base64url').subarray(0, 11);
    const wire = fc.oneof(
      fc.string({ maxLength: 300 }),
      fc.string({ unit: 'binary', maxLength: 300 }),
      fc.stringMatching(/^[A-Za-z0-9_-]{0,400}$/),
      fc.uint8Array({ maxLength: 400 }).map((bytes) => Buffer.from(bytes).toString('base64url')),
      fc.uint8Array({ maxLength: 400 }).map((bytes) => Buffer.concat([header, bytes]).toString('base64url')),
    );
    fc.assert(
      fc.property(wire, (token) => {
        expect(rejectsOpaquely(() => codec.open(token, BINDING))).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('rejects values that are not strings at all', () => {
    fc.assert(
      fc.property(fc.anything(), (value) => {
        fc.pre(typeof value !== 'string');
        expect(rejectsOpaquely(() => codec.open(value as string, BINDING))).toBe(true);
      }),
    );
  });
});
