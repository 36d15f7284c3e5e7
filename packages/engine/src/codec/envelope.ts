/**
 * The envelope: how sealed and signed bytes are laid out on the wire, and
 * the cryptography that protects them. It knows nothing of claims: it turns
 * (header, payload, context) into bytes and back, and authenticates the
 * caller's context (the binding) without storing it, the way PASETO's
 * implicit assertions do. Every failure throws `InvalidRequestStateError`
 * with a reason code. Two layouts (see {@link LAYOUT_V3}, {@link LAYOUT_V2}):
 *
 * - header: `version | mode and flags | kid`; version 3: 6 bytes, `mode |
 *   flags << 4` in one byte and the first 4 bytes of the key id; version 2:
 *   11 bytes, `version | mode | flags | kid (8 bytes)`.
 * - nonce: 16 random bytes (version 3; the state's 128-bit jti) or 12 (version 2).
 * - sealed (AES-256-GCM): `header | nonce | ciphertext | tag (16)`; the IV is the
 *   nonce's first 12 bytes and `aad = header || nonce || context` (version 2:
 *   `header || context`, the nonce being the IV); header and nonce have fixed
 *   sizes, so the AAD is unambiguous.
 * - signed (HMAC-SHA256, truncated to 128 bits as in RFC 4868):
 *   `header | nonce | payload | mac (16)`, with
 *   `mac = HMAC(header || nonce || uint32be(payload length) || payload || context)`.
 * The nonce is authenticated and unique per envelope.
 */
import { createCipheriv, createDecipheriv, createHmac, type KeyObject, timingSafeEqual } from 'node:crypto';
import { InvalidRequestStateError, type InvalidStateReason } from '../errors.js';
import type { KeyRing, RingKey } from './keyRing.js';
import { randomBytesFromPool } from './randomPool.js';

/** Where the parts of an envelope sit, per format version. */
export interface Layout {
  readonly version: number;
  /** Bytes of the header. */
  readonly headerBytes: number;
  /** Bytes of the key id in the header (a prefix of the key's 8-byte id). */
  readonly kidBytes: number;
  /** Bytes of the random nonce (12: it is the IV itself; more: the IV is its prefix, the rest AAD). */
  readonly nonceBytes: number;
}

/** Format version 3: 6-byte header, 4-byte key id, 16-byte nonce (the 128-bit jti). */
export const LAYOUT_V3: Layout = { version: 3, headerBytes: 6, kidBytes: 4, nonceBytes: 16 };
/** Format version 2: 11-byte header, 8-byte key id, 12-byte nonce. */
export const LAYOUT_V2: Layout = { version: 2, headerBytes: 11, kidBytes: 8, nonceBytes: 12 };

const IV_BYTES = 12;
const TAG_BYTES = 16;
const MAC_BYTES = 16;

/** Throw the opaque requestState error. */
export function fail(reason: InvalidStateReason): never {
  throw new InvalidRequestStateError(reason);
}

/** Base64url to bytes, accepting only the canonical unpadded spelling (one envelope, one wire form). */
export function decodeWire(wire: string): Buffer {
  if (!BASE64URL.test(wire)) fail('malformed');
  const bytes = Buffer.from(wire, 'base64url');
  // Canonical: exactly as long as the bytes' own encoding, and a last partial group whose unused
  // bits are zero (re-encoding the last bytes gives the same characters back).
  if (wire.length !== Math.ceil((bytes.length * 4) / 3)) fail('malformed');
  const partial = wire.length % 4;
  if (partial !== 0 && bytes.toString('base64url', bytes.length - (partial - 1)) !== wire.slice(-partial)) {
    fail('malformed');
  }
  return bytes;
}

const BASE64URL = /^[A-Za-z0-9_-]*$/;

/** A header for `key`. */
export function writeHeader(layout: Layout, modeByte: number, flags: number, key: RingKey): Buffer {
  const header = Buffer.allocUnsafe(layout.headerBytes);
  header[0] = layout.version;
  if (layout.version === 2) {
    header[1] = modeByte;
    header[2] = flags;
  } else {
    header[1] = modeByte | (flags << 4);
  }
  key.kidBytes.copy(header, layout.headerBytes - layout.kidBytes, 0, layout.kidBytes);
  return header;
}

/** The format version of an envelope (its first byte), or `undefined` when it has none. */
export function versionOf(envelope: Buffer): number | undefined {
  return envelope[0];
}

/** Finds the ring key whose id starts with the header's key id bytes. */
export type KeyLookup = (kid: Buffer) => RingKey | undefined;

/**
 * A {@link KeyLookup} over `ring` for key ids of `kidBytes` bytes.
 * @throws Error when two keys of the ring share those first bytes (a chance of about 2^-32 per
 *   pair at 4 bytes): the operator generates another key.
 */
export function keyLookup(ring: KeyRing, kidBytes: number): KeyLookup {
  const byPrefix = new Map<string, RingKey>();
  ring.keys.forEach((key, index) => {
    const prefix = key.kidBytes.toString('hex', 0, kidBytes);
    if (byPrefix.has(prefix)) {
      throw new Error(`BATON_KEYS: key ${index + 1} has the same short key id as an earlier key; generate another`);
    }
    byPrefix.set(prefix, key);
  });
  return (kid) => byPrefix.get(kid.toString('hex'));
}

/** Read and check a header: version, mode, allowed flags and a key of the ring. */
export function readHeader(
  envelope: Buffer,
  layout: Layout,
  modeByte: number,
  allowedFlags: number,
  keyOf: KeyLookup,
): { key: RingKey; flags: number } {
  if (envelope.length < layout.headerBytes) fail('malformed');
  if (envelope[0] !== layout.version) fail('unsupported_version');
  const mode = layout.version === 2 ? envelope[1]! : envelope[1]! & 0x0f;
  const flags = layout.version === 2 ? envelope[2]! : envelope[1]! >> 4;
  if (mode !== modeByte || (flags & ~allowedFlags) !== 0) fail('malformed');
  const kid = envelope.subarray(layout.headerBytes - layout.kidBytes, layout.headerBytes);
  const key = keyOf(kid);
  if (key === undefined) throw new InvalidRequestStateError('unknown_key', displayKeyId(kid));
  return { key, flags };
}

/**
 * A header's key id as people compare it with a ring's (`RingKey.kid`, 11 base64url characters):
 * the whole id for 8 bytes; for a shorter prefix, the characters it fixes, then `…`.
 */
export function displayKeyId(kid: Buffer): string {
  const text = kid.toString('base64url');
  return kid.length >= LAYOUT_V2.kidBytes ? text : `${text.slice(0, Math.floor((kid.length * 8) / 6))}…`;
}

/** The associated data of a sealed envelope (see the module comment). */
function aadOf(layout: Layout, header: Buffer, nonce: Buffer, context: Buffer | undefined): Buffer {
  const parts = layout.nonceBytes === IV_BYTES ? [header] : [header, nonce];
  if (context) parts.push(context);
  return parts.length === 1 ? header : Buffer.concat(parts);
}

/** `header | nonce | AES-256-GCM(plaintext, iv = nonce[0..12], aad = header || nonce || context) | tag`. */
export function seal(layout: Layout, subkey: KeyObject, header: Buffer, plaintext: Buffer, context?: Buffer): Buffer {
  const nonce = randomBytesFromPool(layout.nonceBytes);
  const cipher = createCipheriv('aes-256-gcm', subkey, nonce.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
  cipher.setAAD(aadOf(layout, header, nonce, context));
  const first = cipher.update(plaintext);
  const last = cipher.final();
  return Buffer.concat([header, nonce, first, last, cipher.getAuthTag()]);
}

/** Verify and decrypt a sealed envelope; nothing is returned unless the tag verifies. */
export function unseal(layout: Layout, subkey: KeyObject, envelope: Buffer, context?: Buffer): Buffer {
  const nonceEnd = layout.headerBytes + layout.nonceBytes;
  const tagStart = envelope.length - TAG_BYTES;
  if (tagStart < nonceEnd) fail('malformed');
  const header = envelope.subarray(0, layout.headerBytes);
  const nonce = envelope.subarray(layout.headerBytes, nonceEnd);
  try {
    const decipher = createDecipheriv('aes-256-gcm', subkey, nonce.subarray(0, IV_BYTES), {
      authTagLength: TAG_BYTES,
    });
    decipher.setAAD(aadOf(layout, header, nonce, context));
    decipher.setAuthTag(envelope.subarray(tagStart));
    const first = decipher.update(envelope.subarray(nonceEnd, tagStart));
    const last = decipher.final();
    return last.length === 0 ? first : Buffer.concat([first, last]);
  } catch {
    return fail('bad_integrity');
  }
}

/** `header | nonce | payload | mac`. */
export function sign(layout: Layout, subkey: Buffer, header: Buffer, payload: Buffer, context: Buffer): Buffer {
  const nonce = randomBytesFromPool(layout.nonceBytes);
  return Buffer.concat([header, nonce, payload, mac(subkey, header, nonce, payload, context)]);
}

/** Verify a signed envelope (constant time) and return its payload. */
export function verify(layout: Layout, subkey: Buffer, envelope: Buffer, context: Buffer): Buffer {
  const payloadStart = layout.headerBytes + layout.nonceBytes;
  const macStart = envelope.length - MAC_BYTES;
  if (macStart < payloadStart) fail('malformed');
  const payload = envelope.subarray(payloadStart, macStart);
  const expected = mac(
    subkey,
    envelope.subarray(0, layout.headerBytes),
    envelope.subarray(layout.headerBytes, payloadStart),
    payload,
    context,
  );
  if (!timingSafeEqual(expected, envelope.subarray(macStart))) fail('bad_integrity');
  return payload;
}

/** The envelope's random nonce: unique per envelope, authenticated (the state's jti). */
export function nonceOf(layout: Layout, envelope: Buffer): Buffer {
  return envelope.subarray(layout.headerBytes, layout.headerBytes + layout.nonceBytes);
}

function mac(subkey: Buffer, header: Buffer, nonce: Buffer, payload: Buffer, context: Buffer): Buffer {
  const length = Buffer.allocUnsafe(4);
  length.writeUInt32BE(payload.length);
  return createHmac('sha256', subkey)
    .update(header)
    .update(nonce)
    .update(length)
    .update(payload)
    .update(context)
    .digest()
    .subarray(0, MAC_BYTES);
}
