import { createSecretKey, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  decodeWire,
  LAYOUT_V2,
  LAYOUT_V3,
  type Layout,
  nonceOf,
  seal,
  sign,
  unseal,
  verify,
  writeHeader,
} from '../src/codec/envelope.js';
import { createKeyRing } from '../src/codec/keyRing.js';
import { KEY_A, rejection } from './codec.fixtures.js';

const key = createKeyRing([KEY_A]).current;
const bytes = (text: string) => Buffer.from(text, 'utf8');

describe.each([
  ['version 3', LAYOUT_V3],
  ['version 2', LAYOUT_V2],
] as [string, Layout][])('%s layout', (_name, layout) => {
  const header = writeHeader(layout, 0x02, 0, key);
  const prefix = layout.headerBytes + layout.nonceBytes;

  it('writes a header of the layout size with a key id prefix', () => {
    expect(header).toHaveLength(layout.headerBytes);
    expect(header[0]).toBe(layout.version);
    expect(header.subarray(-layout.kidBytes).equals(key.kidBytes.subarray(0, layout.kidBytes))).toBe(true);
  });

  describe('signed envelope', () => {
    const subkey = randomBytes(32);

    it('verifies its payload under the same context only', () => {
      const envelope = sign(layout, subkey, header, bytes('payload'), bytes('context'));
      expect(verify(layout, subkey, envelope, bytes('context')).toString()).toBe('payload');
      expect(rejection(() => verify(layout, subkey, envelope, bytes('context!')))).toBe('bad_integrity');
      expect(rejection(() => verify(layout, randomBytes(32), envelope, bytes('context')))).toBe('bad_integrity');
    });

    it('cannot move bytes between the payload and the context (the payload length is under the MAC)', () => {
      const envelope = sign(layout, subkey, header, bytes('AB'), bytes('CD'));
      // Drop the payload's last byte and prepend it to the context: the concatenation is the same.
      const shorter = Buffer.concat([envelope.subarray(0, prefix + 1), envelope.subarray(prefix + 2)]);
      expect(rejection(() => verify(layout, subkey, shorter, bytes('BCD')))).toBe('bad_integrity');
    });

    it('refuses an envelope too short to hold a nonce and a MAC', () => {
      const short = Buffer.concat([header, randomBytes(layout.nonceBytes + 15)]);
      expect(rejection(() => verify(layout, subkey, short, bytes('c')))).toBe('malformed');
    });
  });

  describe('sealed envelope', () => {
    const subkey = createSecretKey(randomBytes(32));

    it('opens under the same context only, and hides the payload', () => {
      const envelope = seal(layout, subkey, header, bytes('secret payload'), bytes('context'));
      expect(envelope.includes(bytes('secret'))).toBe(false);
      expect(unseal(layout, subkey, envelope, bytes('context')).toString()).toBe('secret payload');
      expect(rejection(() => unseal(layout, subkey, envelope, bytes('contexT')))).toBe('bad_integrity');
      expect(rejection(() => unseal(layout, subkey, envelope))).toBe('bad_integrity');
    });

    it('gives every envelope its own random nonce, every byte of which is authenticated', () => {
      const a = seal(layout, subkey, header, bytes('same'), bytes('c'));
      const b = seal(layout, subkey, header, bytes('same'), bytes('c'));
      expect(nonceOf(layout, a)).toHaveLength(layout.nonceBytes);
      expect(nonceOf(layout, a).equals(nonceOf(layout, b))).toBe(false);
      const swapped = Buffer.concat([a.subarray(0, layout.headerBytes), nonceOf(layout, b), a.subarray(prefix)]);
      expect(rejection(() => unseal(layout, subkey, swapped, bytes('c')))).toBe('bad_integrity');
      // The last nonce byte (past the 12-byte IV in version 3) is authenticated too.
      const flipped = Buffer.from(a);
      flipped[prefix - 1]! ^= 1;
      expect(rejection(() => unseal(layout, subkey, flipped, bytes('c')))).toBe('bad_integrity');
    });
  });
});

describe('wire decoding', () => {
  it('accepts only the canonical unpadded base64url spelling', () => {
    const envelope = randomBytes(31);
    const wire = envelope.toString('base64url');
    expect(decodeWire(wire).equals(envelope)).toBe(true);
    expect(rejection(() => decodeWire(`${wire}=`))).toBe('malformed');
    // 31 bytes end in a 2-character group whose last character has 4 unused bits: set one.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const stray = alphabet[alphabet.indexOf(wire.at(-1)!) + 1]!;
    expect(rejection(() => decodeWire(`${wire.slice(0, -1)}${stray}`))).toBe('malformed');
    // 45 characters (4n + 1) spell no whole number of bytes.
    expect(rejection(() => decodeWire(`${wire}AAA`))).toBe('malformed');
    expect(rejection(() => decodeWire(`${wire.slice(0, 8)} ${wire.slice(8)}`))).toBe('malformed');
  });
});
