import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodePayload } from '../src/codec/claimsPayload.js';
import { dictionaryOf } from '../src/codec/compactValue.js';
import { LAYOUT_V3, seal, sign, writeHeader } from '../src/codec/envelope.js';
import { canonicalJson, createKeyRing } from '../src/codec/index.js';
import { INVALID_REQUEST_STATE_MESSAGE, InvalidRequestStateError } from '../src/errors.js';
import { BINDING, CLAIMS, KEY_A, makeCodec, rejection, T0 } from './codec.fixtures.js';

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
    // A valid version-3 header (6 bytes), and a version-2 header (11) for the transition's reader.
    const header = Buffer.from(codec.mint(BINDING, CLAIMS).token, 'base64url').subarray(0, 6);
    const headerV2 = Buffer.from([2, mode === 'sealed' ? 1 : 2, 0, ...Buffer.from(codec.currentKeyId, 'base64url')]);
    const wire = fc.oneof(
      fc.string({ maxLength: 300 }),
      fc.string({ unit: 'binary', maxLength: 300 }),
      fc.stringMatching(/^[A-Za-z0-9_-]{0,400}$/),
      fc.uint8Array({ maxLength: 400 }).map((bytes) => Buffer.from(bytes).toString('base64url')),
      fc.uint8Array({ maxLength: 400 }).map((bytes) => Buffer.concat([header, bytes]).toString('base64url')),
      fc.uint8Array({ maxLength: 400 }).map((bytes) => Buffer.concat([headerV2, bytes]).toString('base64url')),
    );
    fc.assert(
      fc.property(wire, (token) => {
        expect(rejectsOpaquely(() => codec.open(token, BINDING))).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('refuses random payloads that carry a valid seal or MAC (a codec bug, never a crash)', () => {
    // Past the cryptography only the codec's own bytes arrive; forge some with the key to be sure
    // that a decoder flaw would still surface as an opaque refusal.
    const key = createKeyRing([KEY_A]).current;
    const { principal, flow, method, target, args } = BINDING;
    const context = Buffer.from(canonicalJson([principal, flow, method, target, args]), 'utf8');
    const header = writeHeader(LAYOUT_V3, mode === 'sealed' ? 0x01 : 0x02, 0, key);
    const forge = (payload: Uint8Array) =>
      (mode === 'sealed'
        ? seal(LAYOUT_V3, key.keyObject('seal'), header, Buffer.from(payload), context)
        : sign(LAYOUT_V3, key.subkey('sign'), header, Buffer.from(payload), context)
      ).toString('base64url');
    // Valid claims (within their time window) followed by a random body, and random bytes throughout.
    const claims = encodePayload({ ...CLAIMS, iat: T0, exp: T0 + 60_000, body: undefined }, dictionaryOf(flow, args));
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        for (const payload of [bytes, Buffer.concat([claims, bytes])]) {
          try {
            codec.open(forge(payload), BINDING);
          } catch (error) {
            expect(error).toBeInstanceOf(InvalidRequestStateError);
            expect((error as Error).message).toBe(INVALID_REQUEST_STATE_MESSAGE);
          }
        }
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
