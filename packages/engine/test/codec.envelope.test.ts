import { createSecretKey, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decodeWire, nonceOf, seal, sign, unseal, verify, writeHeader } from '../src/codec/envelope.js';
import { createKeyRing } from '../src/codec/keyRing.js';
import { KEY_A, rejection } from './codec.fixtures.js';

const key = createKeyRing([KEY_A]).current;
const header = writeHeader(2, 0x02, 0, key);
const bytes = (text: string) => Buffer.from(text, 'utf8');

describe('signed envelope', () => {
  const subkey = randomBytes(32);

  it('verifies its payload under the same context only', () => {
    const envelope = sign(subkey, header, bytes('payload'), bytes('context'));
    expect(verify(subkey, envelope, bytes('context')).toString()).toBe('payload');
    expect(rejection(() => verify(subkey, envelope, bytes('context!')))).toBe('bad_integrity');
    expect(rejection(() => verify(randomBytes(32), envelope, bytes('context')))).toBe('bad_integrity');
  });

  it('cannot move bytes between the payload and the context (the payload length is under the MAC)', () => {
    const envelope = sign(subkey, header, bytes('AB'), bytes('CD'));
    // Drop the payload's last byte and prepend it to the context: the concatenation is the same.
    const shorter = Buffer.concat([envelope.subarray(0, 11 + 12 + 1), envelope.subarray(11 + 12 + 2)]);
    expect(rejection(() => verify(subkey, shorter, bytes('BCD')))).toBe('bad_integrity');
  });

  it('refuses an envelope too short to hold a nonce and a MAC', () => {
    expect(rejection(() => verify(subkey, Buffer.concat([header, randomBytes(27)]), bytes('c')))).toBe('malformed');
  });
});

describe('sealed envelope', () => {
  const subkey = createSecretKey(randomBytes(32));

  it('opens under the same context only, and hides the payload', () => {
    const envelope = seal(subkey, header, bytes('secret payload'), bytes('context'));
    expect(envelope.includes(bytes('secret'))).toBe(false);
    expect(unseal(subkey, envelope, bytes('context')).toString()).toBe('secret payload');
    expect(rejection(() => unseal(subkey, envelope, bytes('contexT')))).toBe('bad_integrity');
    expect(rejection(() => unseal(subkey, envelope))).toBe('bad_integrity');
  });

  it('gives every envelope its own 12 random bytes, which are authenticated', () => {
    const a = seal(subkey, header, bytes('same'), bytes('c'));
    const b = seal(subkey, header, bytes('same'), bytes('c'));
    expect(nonceOf(a)).toHaveLength(12);
    expect(nonceOf(a).equals(nonceOf(b))).toBe(false);
    const swapped = Buffer.concat([a.subarray(0, 11), nonceOf(b), a.subarray(23)]);
    expect(rejection(() => unseal(subkey, swapped, bytes('c')))).toBe('bad_integrity');
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
