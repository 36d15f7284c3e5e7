/**
 * The envelope: how sealed and signed bytes are laid out on the wire, and
 * the cryptography that protects them. It knows nothing of claims: it turns
 * (header, payload, context) into bytes and back, and authenticates the
 * caller's context (the binding) without storing it, the way PASETO's
 * implicit assertions do. Every failure throws `InvalidRequestStateError`
 * with a reason code.
 *
 * - header, 11 bytes: `version | mode | flags | kid (8 bytes)`.
 * - sealed (AES-256-GCM): `header | iv (12) | ciphertext | tag (16)`, with
 *   `aad = header || context`; the header has a fixed size, so the AAD is unambiguous.
 * - signed (HMAC-SHA256, truncated to 128 bits as in RFC 4868):
 *   `header | nonce (12) | payload | mac (16)`, with
 *   `mac = HMAC(header || nonce || uint32be(payload length) || payload || context)`.
 * The 12 random bytes (IV or nonce) are authenticated and unique per envelope.
 */
import { createCipheriv, createDecipheriv, createHmac, type KeyObject, timingSafeEqual } from 'node:crypto';
import { InvalidRequestStateError, type InvalidStateReason } from '../errors.js';
import type { KeyRing, RingKey } from './keyRing.js';
import { randomBytesFromPool } from './randomPool.js';

/** Bytes in a header. */
const HEADER_BYTES = 11;
/** Bytes of the random IV (sealed) or nonce (signed). */
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const MAC_BYTES = 16;
const KID_OFFSET = 3;

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
export function writeHeader(version: number, modeByte: number, flags: number, key: RingKey): Buffer {
  const header = Buffer.allocUnsafe(HEADER_BYTES);
  header[0] = version;
  header[1] = modeByte;
  header[2] = flags;
  key.kidBytes.copy(header, KID_OFFSET);
  return header;
}

/** Read and check a header: version, mode, allowed flags and a key of the ring. */
export function readHeader(
  envelope: Buffer,
  version: number,
  modeByte: number,
  allowedFlags: number,
  ring: KeyRing,
): { key: RingKey; flags: number } {
  if (envelope.length < HEADER_BYTES) fail('malformed');
  if (envelope[0] !== version) fail('unsupported_version');
  const flags = envelope[2]!;
  if (envelope[1] !== modeByte || (flags & ~allowedFlags) !== 0) fail('malformed');
  const key = ring.byKid(envelope.toString('base64url', KID_OFFSET, HEADER_BYTES));
  if (key === undefined) fail('unknown_key');
  return { key, flags };
}

/** `header | iv | AES-256-GCM(plaintext, aad = header || context) | tag`. */
export function seal(subkey: KeyObject, header: Buffer, plaintext: Buffer, context?: Buffer): Buffer {
  const iv = randomBytesFromPool(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', subkey, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(context ? Buffer.concat([header, context]) : header);
  const first = cipher.update(plaintext);
  const last = cipher.final();
  return Buffer.concat([header, iv, first, last, cipher.getAuthTag()]);
}

/** Verify and decrypt a sealed envelope; nothing is returned unless the tag verifies. */
export function unseal(subkey: KeyObject, envelope: Buffer, context?: Buffer): Buffer {
  const ivEnd = HEADER_BYTES + NONCE_BYTES;
  const tagStart = envelope.length - TAG_BYTES;
  if (tagStart < ivEnd) fail('malformed');
  const header = envelope.subarray(0, HEADER_BYTES);
  try {
    const decipher = createDecipheriv('aes-256-gcm', subkey, envelope.subarray(HEADER_BYTES, ivEnd), {
      authTagLength: TAG_BYTES,
    });
    decipher.setAAD(context ? Buffer.concat([header, context]) : header);
    decipher.setAuthTag(envelope.subarray(tagStart));
    const first = decipher.update(envelope.subarray(ivEnd, tagStart));
    const last = decipher.final();
    return last.length === 0 ? first : Buffer.concat([first, last]);
  } catch {
    return fail('bad_integrity');
  }
}

/** `header | nonce | payload | mac`. */
export function sign(subkey: Buffer, header: Buffer, payload: Buffer, context: Buffer): Buffer {
  const nonce = randomBytesFromPool(NONCE_BYTES);
  return Buffer.concat([header, nonce, payload, mac(subkey, header, nonce, payload, context)]);
}

/** Verify a signed envelope (constant time) and return its payload. */
export function verify(subkey: Buffer, envelope: Buffer, context: Buffer): Buffer {
  const payloadStart = HEADER_BYTES + NONCE_BYTES;
  const macStart = envelope.length - MAC_BYTES;
  if (macStart < payloadStart) fail('malformed');
  const payload = envelope.subarray(payloadStart, macStart);
  const expected = mac(
    subkey,
    envelope.subarray(0, HEADER_BYTES),
    envelope.subarray(HEADER_BYTES, payloadStart),
    payload,
    context,
  );
  if (!timingSafeEqual(expected, envelope.subarray(macStart))) fail('bad_integrity');
  return payload;
}

/** The envelope's random 12 bytes (IV or nonce): unique per envelope, authenticated. */
export function nonceOf(envelope: Buffer): Buffer {
  return envelope.subarray(HEADER_BYTES, HEADER_BYTES + NONCE_BYTES);
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
