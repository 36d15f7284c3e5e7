import { hkdfSync, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createKeyRing, generateKey, parseKeyRingEnv, weakKeyReason, weakKeyTextReason } from '../src/codec/index.js';
import { KEY_A, KEY_B } from './codec.fixtures.js';

const randomBlock = (n: number) => new Uint8Array(randomBytes(n));
/** 16 distinct bytes in no simple order. */
const BLOCK = Buffer.from([3, 141, 59, 26, 53, 58, 97, 93, 238, 46, 226, 43, 38, 32, 79, 50]);

describe('key ring', () => {
  it('mints with the first key and knows every key by id', () => {
    const ring = createKeyRing([KEY_B, KEY_A]);
    const [b, a] = ring.keys;
    expect(ring.current).toBe(b);
    expect(ring.byKid(a!.kid)).toBe(a);
    expect(ring.byKid(b!.kid)).toBe(b);
    expect(ring.byKid('AAAAAAAAAAA')).toBeUndefined();
    expect(a!.kid).toMatch(/^[A-Za-z0-9_-]{11}$/);
    expect(a!.kidBytes).toHaveLength(8);
  });

  it('derives subkeys with HKDF-SHA256, salt baton/v1, one per purpose, cached', () => {
    const key = createKeyRing([KEY_A]).current;
    const expected = Buffer.from(hkdfSync('sha256', Buffer.from(KEY_A, 'base64url'), 'baton/v1', 'seal', 32));
    expect(key.subkey('seal').equals(expected)).toBe(true);
    expect(key.subkey('seal')).toBe(key.subkey('seal'));
    const purposes = ['seal', 'sign', 'digest', 'blob:outcome', 'blob:other'] as const;
    expect(new Set(purposes.map((p) => key.subkey(p).toString('hex'))).size).toBe(purposes.length);
    expect(
      key.kidBytes.equals(Buffer.from(hkdfSync('sha256', Buffer.from(KEY_A, 'base64url'), 'baton/v1', 'kid', 8))),
    ).toBe(true);
  });

  it('accepts raw bytes and copies them', () => {
    const raw = new Uint8Array(Buffer.from(KEY_A, 'base64url'));
    const ring = createKeyRing([raw]);
    raw.fill(0);
    expect(ring.current.kid).toBe(createKeyRing([KEY_A]).current.kid);
  });

  it('rejects short keys with a message that names the position, not the key', () => {
    const short = Buffer.alloc(24, 0x5c).toString('base64url');
    expect(() => createKeyRing([KEY_A, short])).toThrow('BATON_KEYS: key 2 is 24 bytes; at least 32 are required');
    try {
      createKeyRing([KEY_A, short]);
    } catch (error) {
      expect((error as Error).message).not.toContain(short);
      expect((error as Error).message).not.toContain(KEY_A);
    }
    expect(() => createKeyRing([new Uint8Array(randomBytes(31))])).toThrow(
      'BATON_KEYS: key 1 is 31 bytes; at least 32 are required',
    );
  });

  it('rejects keys that do not look random, naming the position and never the key', () => {
    const cases: [Uint8Array, RegExp][] = [
      [new Uint8Array(32), /only 1 distinct byte value;/],
      [Buffer.alloc(48, 0x41), /only 1 distinct byte value;/],
      [Buffer.from('abcdefghabcdefghabcdefghabcdefgh'), /only 8 distinct byte values/],
      [Buffer.concat([BLOCK, BLOCK]), /repeats a block of 16 bytes/],
      [Uint8Array.from({ length: 32 }, (_, i) => i), /follow a simple sequence/],
      [Uint8Array.from({ length: 32 }, (_, i) => (200 - 7 * i) & 0xff), /follow a simple sequence/],
    ];
    for (const [bytes, reason] of cases) {
      expect(weakKeyReason(bytes)).toMatch(reason);
      const encoded = Buffer.from(bytes).toString('base64url');
      expect(() => createKeyRing([KEY_A, encoded])).toThrow(/^BATON_KEYS: key 2 does not look random \(/);
      expect(() => createKeyRing([KEY_A, encoded])).toThrow(/use random bytes, e\.g\. from "baton keygen"$/);
      expect(() => createKeyRing([KEY_A, bytes])).toThrow(reason);
      expect(() => parseKeyRingEnv(encoded)).toThrow(/^BATON_KEYS: key 1 does not look random/);
      try {
        createKeyRing([encoded]);
      } catch (error) {
        expect((error as Error).message).not.toContain(encoded);
      }
    }
    for (let i = 0; i < 2000; i++) expect(weakKeyReason(randomBlock(32))).toBeUndefined();
  });

  it('rejects passphrases: a key written in letters of one case, or whose bytes are all printable text', () => {
    // The example: 43 lower-case letters decode to 32 bytes with 26 distinct values, which
    // pass the byte rules; as written it is plainly words.
    const passphrase = 'correcthorsebatterystaplecorrecthorsebatter';
    expect(Buffer.from(passphrase, 'base64url')).toHaveLength(32);
    expect(weakKeyReason(Buffer.from(passphrase, 'base64url'))).toBeUndefined();
    for (const text of [
      passphrase,
      'correct-horse-battery-staple-correct-horse-',
      'CORRECT_HORSE_BATTERY_STAPLE_CORRECT_HORSE_',
      `${passphrase}=`,
    ]) {
      expect(weakKeyTextReason(text)).toMatch(/letters of one case only, like a passphrase/);
      expect(() => parseKeyRingEnv(`${KEY_A},${text}`)).toThrow(
        /^BATON_KEYS: key 2 does not look random \(it is written in letters of one case only, like a passphrase, not base64url of random bytes\); use random bytes, e\.g\. from "baton keygen"$/,
      );
      try {
        parseKeyRingEnv(text);
      } catch (error) {
        expect((error as Error).message).not.toContain(text);
      }
    }
    // A passphrase given as bytes, or as the base64url of its text: every byte printable ASCII.
    const sentence = Buffer.from('Correct Horse, Battery Staple! 1984 + 2024');
    expect(weakKeyReason(sentence)).toBe('its bytes are all printable text, like a passphrase');
    expect(() => createKeyRing([sentence.toString('base64url')])).toThrow(
      /^BATON_KEYS: key 1 does not look random \(its bytes are all printable text, like a passphrase\)/,
    );
    expect(() => createKeyRing([new Uint8Array(sentence)])).toThrow(/printable text/);
    // Mixed case, digits or a single byte outside printable ASCII: not this rule.
    expect(weakKeyTextReason('correcthorsebatterystaplecorrecthorsebatteR')).toBeUndefined();
    expect(weakKeyTextReason('correcthorsebatterystaplecorrecthorsebatte0')).toBeUndefined();
    expect(weakKeyReason(Buffer.concat([sentence.subarray(0, 31), Buffer.from([0x80])]))).toBeUndefined();
    // Random keys pass both (the chance of a refusal is about 1.7e-14 per key).
    for (let i = 0; i < 2000; i++) {
      const bytes = randomBytes(32);
      expect(weakKeyReason(bytes)).toBeUndefined();
      expect(weakKeyTextReason(bytes.toString('base64url'))).toBeUndefined();
    }
  });

  it('rejects non-base64url keys, duplicates and empty rings without printing keys', () => {
    const standardBase64 = `${Buffer.alloc(32, 0xfb).toString('base64')}`; // '+' and '/': not base64url
    expect(() => createKeyRing([standardBase64])).toThrow(/^BATON_KEYS: key 1 is not base64url/);
    expect(() => createKeyRing([standardBase64])).not.toThrow(standardBase64);
    expect(() => createKeyRing([KEY_A, KEY_B, KEY_A])).toThrow('BATON_KEYS: key 3 is a duplicate of an earlier key');
    expect(() => createKeyRing([])).toThrow('BATON_KEYS: at least one key is required');
    expect(() => createKeyRing([42 as unknown as string])).toThrow(/key 1 is neither/);
  });

  it('parses BATON_KEYS: comma-separated, whitespace and empty entries ignored', () => {
    const ring = parseKeyRingEnv(` ${KEY_B} ,, ${KEY_A},`);
    expect(ring.keys.map((k) => k.kid)).toEqual(createKeyRing([KEY_B, KEY_A]).keys.map((k) => k.kid));
    expect(() => parseKeyRingEnv('')).toThrow('at least one key');
    expect(() => parseKeyRingEnv(undefined)).toThrow('at least one key');
    expect(() => parseKeyRingEnv(`${KEY_A},c2hvcnQ`)).toThrow('BATON_KEYS: key 2 is 5 bytes; at least 32 are required');
  });

  it('generates fresh 32-byte base64url keys a ring accepts', () => {
    const keys = Array.from({ length: 50 }, generateKey);
    expect(new Set(keys).size).toBe(50);
    for (const key of keys) {
      expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(Buffer.from(key, 'base64url')).toHaveLength(32);
    }
    expect(createKeyRing(keys).keys).toHaveLength(50);
  });
});
