/**
 * The requestState codec: mints the opaque string a server hands an MCP client
 * between rounds, and opens it again, authenticated, unexpired and bound to
 * the same principal, method, target and arguments. Everything is checked
 * before anything decoded is parsed, and every failure is one opaque
 * `InvalidRequestStateError` whose `reason` is for the server log only.
 *
 * Wire format, version 1: `base64url(header || body)`, canonical base64url, no padding.
 * - header, 11 bytes: `version (0x01) | mode (0x01 sealed, 0x02 signed, 0x03 blob) |
 *   flags (bit 0: payload is deflate-raw'd; other bits must be 0) | kid (8 bytes)`.
 * - sealed: `header | iv (12 random bytes) | AES-256-GCM(seal subkey, payload, aad = header) | tag (16)`.
 * - signed: `header | payload | HMAC-SHA256(sign subkey, header || payload) (32)`; the payload is
 *   readable by anyone (base64url, maybe deflate): use it only when the body holds nothing secret.
 * - blob (`sealBlob`): like sealed, mode 0x03, flags 0, with the `blob:<purpose>` subkey.
 * The payload is the JSON of the claims under short keys: `i` iat, `e` exp (ms), `j` jti
 * (16 random bytes), `f` fid, `n` flow, `h` hash, `r` round, `q` pending, `d` body, `p` = first 16
 * bytes of HMAC(principal subkey, principal), `b` = HMAC(bind subkey, canonicalJson([method, target,
 * args])). `v` and `kid` are the header's (authenticated as AAD / under the MAC), not repeated.
 *
 * Limits and caveats: GCM IVs are random, so mint well under 2^32 states per key (rotate keys).
 * Compression before encryption lets whoever sees token sizes learn something about how a body
 * compresses, and a client controls part of every body (its answers are held in the state): so
 * sealed states are not compressed unless `compressThresholdBytes` asks for it; signed states
 * (readable anyway) are deflated from 256 bytes up when that makes them smaller.
 */
import { createCipheriv, createDecipheriv, createHmac, timingSafeEqual } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { z } from 'zod';
import { InvalidRequestStateError, type InvalidStateReason } from '../errors.js';
import { canonicalJson } from './canonicalJson.js';
import { randomBytesFromPool } from './randomPool.js';

/** JSON.stringify replacer: a non-finite number would come back as `null`, so refuse it. */
function finiteNumbersOnly(_key: string, value: unknown): unknown {
  if (typeof value === 'number' && !Number.isFinite(value)) {
    throw new TypeError('requestState: the body holds a non-finite number, which JSON cannot carry');
  }
  return value;
}

import { createKeyRing, type KeyRing, type RingKey } from './keyRing.js';
import type {
  CodecMode,
  MintClaims,
  MintOptions,
  RequestStateClaims,
  RequestStateCodec,
  StateBinding,
} from './types.js';

/** Options of {@link createRequestStateCodec}. */
export interface RequestStateCodecOptions {
  /** A key ring, or master secrets to build one from (first mints, all verify). */
  readonly keys: KeyRing | readonly (string | Uint8Array)[];
  /** `sealed` (AES-256-GCM, default) or `signed` (HMAC-SHA256, body readable by the client). */
  readonly mode?: CodecMode;
  /** Lifetime of a minted state, in seconds (default 1800). */
  readonly ttlSeconds?: number;
  /** How far in the future an `iat` may be, in seconds (default 30). */
  readonly clockSkewSeconds?: number;
  /** Maximum wire length in characters, checked before decoding (default 16384). */
  readonly maxTokenBytes?: number;
  /** Maximum decompressed payload in bytes, enforced while inflating (default 262144). */
  readonly maxPayloadBytes?: number;
  /** Deflate payloads from this size on, when it makes them smaller (default: never when sealed, 256 when signed). */
  readonly compressThresholdBytes?: number;
  /** Clock in ms since epoch (default `Date.now`). */
  readonly now?: () => number;
}

/** Envelope format version written by this codec. */
export const REQUEST_STATE_VERSION = 1;

const MODE_BYTE = { sealed: 0x01, signed: 0x02 } as const;
const BLOB_MODE_BYTE = 0x03;
const FLAG_DEFLATE = 0x01;
const KID_BYTES = 8;
const HEADER_BYTES = 3 + KID_BYTES;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const MAC_BYTES = 32;
const WIRE_ALPHABET = /^[A-Za-z0-9_-]+$/;

const base64url = (bytes: number) => z.string().regex(new RegExp(`^[A-Za-z0-9_-]{${Math.ceil((bytes * 4) / 3)}}$`));

/** The sealed payload, short keys (see the module comment). */
const payloadSchema = z.strictObject({
  i: z.int().nonnegative(),
  e: z.int().nonnegative(),
  j: base64url(16),
  f: z.string(),
  n: z.string(),
  h: z.string(),
  r: z.int().nonnegative(),
  q: z.array(z.string()),
  d: z.unknown().optional(),
  p: base64url(16),
  b: base64url(32),
});

/**
 * Create a requestState codec.
 * @throws Error for an invalid key ring (see `createKeyRing`); TypeError for invalid options.
 */
export function createRequestStateCodec(options: RequestStateCodecOptions): RequestStateCodec {
  const ring = isKeyRing(options.keys) ? options.keys : createKeyRing(options.keys);
  const mode = options.mode ?? 'sealed';
  if (mode !== 'sealed' && mode !== 'signed') throw new TypeError(`requestState codec: unknown mode ${String(mode)}`);
  const modeByte = MODE_BYTE[mode];
  const ttlSeconds = positive('ttlSeconds', options.ttlSeconds ?? 1800);
  const skewMs = nonNegative('clockSkewSeconds', options.clockSkewSeconds ?? 30) * 1000;
  const maxTokenBytes = positive('maxTokenBytes', options.maxTokenBytes ?? 16384);
  const maxPayloadBytes = positive('maxPayloadBytes', options.maxPayloadBytes ?? 262144);
  // Sealed states are not compressed by default: compressing before encrypting would let a client that
  // controls part of a body (its own answers, held in the state) probe secrets beside it through sizes.
  const compressThreshold = nonNegative(
    'compressThresholdBytes',
    options.compressThresholdBytes ?? (mode === 'sealed' ? Number.POSITIVE_INFINITY : 256),
    true,
  );
  const now = options.now ?? Date.now;

  // A runner opens and mints with the same binding object in one round: compute its tags once.
  const tagCache = new WeakMap<StateBinding, Map<string, BindingTags>>();
  const tags = (key: RingKey, binding: StateBinding): BindingTags => {
    let byKey = tagCache.get(binding);
    if (!byKey) {
      byKey = new Map();
      tagCache.set(binding, byKey);
    }
    let found = byKey.get(key.kid);
    if (!found) {
      found = bindingTags(key, binding);
      byKey.set(key.kid, found);
    }
    return found;
  };

  return {
    mode,
    currentKeyId: ring.current.kid,

    mint<TBody>(binding: StateBinding, claims: MintClaims<TBody>, mintOptions?: MintOptions) {
      const key = ring.current;
      const iat = Math.floor(now());
      const exp = iat + Math.round(positive('ttlSeconds', mintOptions?.ttlSeconds ?? ttlSeconds) * 1000);
      const jti = randomBytesFromPool(16).toString('base64url');
      const payload = {
        i: iat,
        e: exp,
        j: jti,
        f: claims.fid,
        n: claims.flow,
        h: claims.hash,
        r: claims.round,
        q: [...claims.pending],
        d: claims.body,
        p: tags(key, binding).principal().toString('base64url'),
        b: tags(key, binding).binding().toString('base64url'),
      };
      if (!payloadSchema.safeParse(payload).success) {
        throw new TypeError(
          'requestState: claims must have string fid/flow/hash, a non-negative integer round and string pending keys',
        );
      }
      // Plain JSON: the payload is authenticated as bytes, so key order need not be canonical.
      let bytes = Buffer.from(JSON.stringify(payload, finiteNumbersOnly), 'utf8');
      if (bytes.length > maxPayloadBytes) {
        throw new RangeError(`requestState: payload is ${bytes.length} bytes; maxPayloadBytes is ${maxPayloadBytes}`);
      }
      let flags = 0;
      if (bytes.length >= compressThreshold) {
        const deflated = deflateRawSync(bytes);
        if (deflated.length < bytes.length) {
          bytes = deflated;
          flags |= FLAG_DEFLATE;
        }
      }
      const header = writeHeader(modeByte, flags, key);
      const envelope =
        mode === 'sealed'
          ? aeadSeal(key.subkey('seal'), header, bytes)
          : Buffer.concat([header, bytes, mac(key, header, bytes)]);
      const token = envelope.toString('base64url');
      if (token.length > maxTokenBytes) {
        throw new RangeError(`requestState: token is ${token.length} characters; maxTokenBytes is ${maxTokenBytes}`);
      }
      const minted: RequestStateClaims<TBody> = {
        v: REQUEST_STATE_VERSION,
        kid: key.kid,
        iat,
        exp,
        jti,
        fid: claims.fid,
        flow: claims.flow,
        hash: claims.hash,
        round: claims.round,
        pending: payload.q,
        body: claims.body,
      };
      return { token, claims: minted };
    },

    open(token: string, binding: StateBinding): RequestStateClaims {
      if (typeof token !== 'string') fail('malformed');
      if (token.length > maxTokenBytes) fail('too_large');
      const envelope = decodeWire(token);
      const { key, flags } = readHeader(envelope, modeByte, ring);

      let bytes: Buffer;
      if (mode === 'sealed') {
        bytes = aeadOpen(key.subkey('seal'), envelope);
      } else {
        if (envelope.length < HEADER_BYTES + MAC_BYTES) fail('malformed');
        const header = envelope.subarray(0, HEADER_BYTES);
        bytes = envelope.subarray(HEADER_BYTES, envelope.length - MAC_BYTES);
        if (!safeEqual(mac(key, header, bytes), envelope.subarray(envelope.length - MAC_BYTES))) fail('bad_integrity');
      }
      bytes = inflate(bytes, flags, maxPayloadBytes);

      let json: unknown;
      try {
        json = JSON.parse(bytes.toString('utf8'));
      } catch {
        fail('malformed');
      }
      const parsed = payloadSchema.safeParse(json);
      if (!parsed.success) fail('malformed');
      const c = parsed.data;

      const t = now();
      if (t > c.e) fail('expired');
      if (c.i > t + skewMs) fail('not_yet_valid');
      if (
        !safeEqual(
          attempt(() => tags(key, binding).principal()),
          Buffer.from(c.p, 'base64url'),
        )
      ) {
        fail('principal_mismatch');
      }
      if (
        !safeEqual(
          attempt(() => tags(key, binding).binding()),
          Buffer.from(c.b, 'base64url'),
        )
      ) {
        fail('binding_mismatch');
      }
      return {
        v: REQUEST_STATE_VERSION,
        kid: key.kid,
        iat: c.i,
        exp: c.e,
        jti: c.j,
        fid: c.f,
        flow: c.n,
        hash: c.h,
        round: c.r,
        pending: c.q,
        body: c.d,
      };
    },

    sealBlob(plaintext: string, purpose: string): string {
      const key = ring.current;
      const header = writeHeader(BLOB_MODE_BYTE, 0, key);
      return aeadSeal(key.subkey(`blob:${purpose}`), header, Buffer.from(plaintext, 'utf8')).toString('base64url');
    },

    openBlob(sealed: string, purpose: string): string {
      try {
        if (typeof sealed !== 'string') fail('malformed');
        const envelope = decodeWire(sealed);
        const { key, flags } = readHeader(envelope, BLOB_MODE_BYTE, ring);
        if (flags !== 0) fail('malformed');
        return aeadOpen(key.subkey(`blob:${purpose}`), envelope).toString('utf8');
      } catch {
        throw new InvalidRequestStateError('bad_integrity');
      }
    },

    /**
     * HMAC-SHA256 under the minting key's `digest` subkey of `canonicalJson([purpose, value])`.
     * Digests change when the minting key rotates: compare them only within one rotation
     * (ledger retries are seconds apart, so this is fine).
     */
    digest(value: unknown, purpose: string): string {
      return createHmac('sha256', ring.current.subkey('digest'))
        .update(canonicalJson([purpose, value]))
        .digest('base64url');
    },
  };
}

function fail(reason: InvalidStateReason): never {
  throw new InvalidRequestStateError(reason);
}

/** Base64url to bytes, accepting only the canonical unpadded spelling (so one envelope has one wire form). */
function decodeWire(wire: string): Buffer {
  if (!WIRE_ALPHABET.test(wire)) fail('malformed');
  const bytes = Buffer.from(wire, 'base64url');
  if (bytes.toString('base64url') !== wire) fail('malformed');
  return bytes;
}

function writeHeader(modeByte: number, flags: number, key: RingKey): Buffer {
  const header = Buffer.alloc(HEADER_BYTES);
  header[0] = REQUEST_STATE_VERSION;
  header[1] = modeByte;
  header[2] = flags;
  key.kidBytes.copy(header, 3);
  return header;
}

function readHeader(envelope: Buffer, modeByte: number, ring: KeyRing): { key: RingKey; flags: number } {
  if (envelope.length < HEADER_BYTES) fail('malformed');
  if (envelope[0] !== REQUEST_STATE_VERSION) fail('unsupported_version');
  const flags = envelope[2]!;
  if (envelope[1] !== modeByte || (flags & ~FLAG_DEFLATE) !== 0) fail('malformed');
  const key = ring.byKid(envelope.subarray(3, HEADER_BYTES).toString('base64url'));
  if (key === undefined) fail('unknown_key');
  return { key, flags };
}

function aeadSeal(subkey: Buffer, header: Buffer, plaintext: Buffer): Buffer {
  const iv = randomBytesFromPool(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', subkey, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(header);
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([header, iv, body, cipher.getAuthTag()]);
}

/** Verify and decrypt `header | iv | ciphertext | tag`; nothing is returned unless the tag verifies. */
function aeadOpen(subkey: Buffer, envelope: Buffer): Buffer {
  if (envelope.length < HEADER_BYTES + IV_BYTES + TAG_BYTES) fail('malformed');
  const ivEnd = HEADER_BYTES + IV_BYTES;
  const tagStart = envelope.length - TAG_BYTES;
  try {
    const decipher = createDecipheriv('aes-256-gcm', subkey, envelope.subarray(HEADER_BYTES, ivEnd), {
      authTagLength: TAG_BYTES,
    });
    decipher.setAAD(envelope.subarray(0, HEADER_BYTES));
    decipher.setAuthTag(envelope.subarray(tagStart));
    const plaintext = decipher.update(envelope.subarray(ivEnd, tagStart));
    return Buffer.concat([plaintext, decipher.final()]);
  } catch {
    return fail('bad_integrity');
  }
}

function mac(key: RingKey, header: Buffer, payload: Buffer): Buffer {
  return createHmac('sha256', key.subkey('sign')).update(header).update(payload).digest();
}

/** Inflate an authenticated payload, failing as soon as the output passes the cap. */
function inflate(bytes: Buffer, flags: number, maxPayloadBytes: number): Buffer {
  if ((flags & FLAG_DEFLATE) === 0) {
    if (bytes.length > maxPayloadBytes) fail('payload_too_large');
    return bytes;
  }
  try {
    return inflateRawSync(bytes, { maxOutputLength: maxPayloadBytes });
  } catch (error) {
    return fail((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' ? 'payload_too_large' : 'malformed');
  }
}

/** The principal hash and binding digest of one binding under one key, each computed on first use. */
interface BindingTags {
  principal(): Buffer;
  binding(): Buffer;
}

function bindingTags(key: RingKey, binding: StateBinding): BindingTags {
  let p: Buffer | undefined;
  let b: Buffer | undefined;
  return {
    principal: () => (p ??= principalHash(key, binding.principal)),
    binding: () => (b ??= bindingDigest(key, binding)),
  };
}

function principalHash(key: RingKey, principal: string): Buffer {
  return createHmac('sha256', key.subkey('principal')).update(principal, 'utf8').digest().subarray(0, 16);
}

function bindingDigest(key: RingKey, binding: StateBinding): Buffer {
  return createHmac('sha256', key.subkey('bind'))
    .update(canonicalJson([binding.method, binding.target, binding.args]))
    .digest();
}

/** Run a digest over caller-supplied binding data; a binding that cannot be digested matches nothing. */
function attempt(compute: () => Buffer): Buffer {
  try {
    return compute();
  } catch {
    return Buffer.alloc(0);
  }
}

/** Constant-time equality (lengths are public: every compared value has a fixed size). */
function safeEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

function isKeyRing(keys: RequestStateCodecOptions['keys']): keys is KeyRing {
  return !Array.isArray(keys);
}

function positive(name: string, value: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new TypeError(`requestState codec: ${name} must be a positive number`);
  }
  return value;
}

function nonNegative(name: string, value: number, allowInfinity = false): number {
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0 || (!allowInfinity && !Number.isFinite(value))) {
    throw new TypeError(`requestState codec: ${name} must be a non-negative number`);
  }
  return value;
}
