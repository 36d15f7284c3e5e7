/**
 * The requestState codec: mints the opaque string a server hands an MCP client
 * between rounds, and opens it again, authenticated, unexpired and bound to
 * the same principal, flow, method, target and arguments. Everything is
 * checked before anything decoded is parsed, and every failure is one opaque
 * `InvalidRequestStateError` whose `reason` is for the server log only.
 *
 * Wire format, version 3: `base64url(envelope)`, canonical, unpadded (see `envelope.ts`).
 * - header flags: bit 0 = payload deflate-raw'd; other bits must be 0. Modes: 0x01 sealed
 *   (AES-256-GCM, the default), 0x02 signed (HMAC-SHA256/128, payload readable), 0x03 blob.
 * - the binding, `canonicalJson([principal, flow, method, target, args])`, is authenticated as
 *   associated data and never stored: a state presented by another principal, or for another
 *   flow, tool or arguments, fails integrity like a forged one (reason `bad_integrity`). This
 *   is how the design's "request digest" and "keyed hash of the principal" claims are carried:
 *   exactly, in zero bytes, and without even a hash of the principal in the state.
 * - the payload is `claimsPayload.ts`'s: iat, lifetime, round, fid, definition hash, then the
 *   body in the compact binary encoding of `compactValue.ts`, whose dictionary (the flow name
 *   and the arguments' strings) comes from the binding.
 * - the jti is the envelope's authenticated random 16 bytes (128 bits; the GCM IV is its first
 *   12, or the signed nonce).
 * - blobs (mode 0x03, for ledger outcomes stored for days) keep the version-2 layout.
 * Version 2 (11-byte header, 12-byte nonce and jti, 48 fixed bytes of claims, body as JSON) is
 * still opened, so states in flight across an upgrade finish; drop it one maximum state
 * lifetime (`--max-ttl`) after every server mints version 3. Version 1 (JSON claims with
 * stored principal and binding digests) is refused as `unsupported_version`: no release
 * ever minted it.
 *
 * Limits and caveats: GCM IVs are random, so mint well under 2^32 states per key (rotate keys).
 * Compression before encryption lets whoever sees token sizes learn something about how a body
 * compresses, and a client controls part of every body (its answers are held in the state): so
 * sealed states are not compressed unless `compressThresholdBytes` asks for it; signed states
 * (readable anyway) are deflated from 256 bytes up when that makes them smaller.
 */
import { createHmac } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { InvalidRequestStateError, StateTooLargeError } from '../errors.js';
import { canonicalJson } from './canonicalJson.js';
import { decodePayload, decodePayloadV2, encodePayload } from './claimsPayload.js';
import { type Dictionary, dictionaryOf } from './compactValue.js';
import {
  decodeWire,
  fail,
  keyLookup,
  LAYOUT_V2,
  LAYOUT_V3,
  nonceOf,
  readHeader,
  seal,
  sign,
  unseal,
  verify,
  versionOf,
  writeHeader,
} from './envelope.js';
import { createKeyRing, type KeyRing } from './keyRing.js';
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

/** Envelope format version written by this codec (it also opens version 2, the previous one). */
export const REQUEST_STATE_VERSION = 3;

const MODE_BYTE = { sealed: 0x01, signed: 0x02 } as const;
const BLOB_MODE_BYTE = 0x03;
const FLAG_DEFLATE = 0x01;

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
  const keyOfV3 = keyLookup(ring, LAYOUT_V3.kidBytes);
  const keyOfV2 = keyLookup(ring, LAYOUT_V2.kidBytes);
  // A runner opens and mints with the same binding object in one round: encode it once. One
  // WeakMap entry per binding holds both (an entry per round is what this costs).
  const encoded = new WeakMap<StateBinding, { context?: Buffer; dictionary?: Dictionary }>();
  const encodingOf = (binding: StateBinding) => {
    let entry = encoded.get(binding);
    if (entry === undefined) {
      entry = {};
      encoded.set(binding, entry);
    }
    return entry;
  };
  const contextOf = (binding: StateBinding): Buffer => {
    const entry = encodingOf(binding);
    entry.context ??= bindingBytes(binding);
    return entry.context;
  };
  const dictionaryFor = (binding: StateBinding): Dictionary => {
    const entry = encodingOf(binding);
    entry.dictionary ??= dictionaryOf(binding.flow, binding.args);
    return entry.dictionary;
  };

  return {
    mode,
    currentKeyId: ring.current.kid,

    mint<TBody>(binding: StateBinding, claims: MintClaims<TBody>, mintOptions?: MintOptions) {
      const key = ring.current;
      const iat = Math.floor(now());
      const exp = iat + Math.round(positive('ttlSeconds', mintOptions?.ttlSeconds ?? ttlSeconds) * 1000);
      const context = contextOf(binding);
      let payload = encodePayload(
        { iat, exp, round: claims.round, fid: claims.fid, hash: claims.hash, body: claims.body },
        dictionaryFor(binding),
      );
      if (payload.length > maxPayloadBytes) {
        throw new StateTooLargeError('payload', payload.length, maxPayloadBytes);
      }
      let flags = 0;
      if (payload.length >= compressThreshold) {
        const deflated = deflateRawSync(payload);
        if (deflated.length < payload.length) {
          payload = deflated;
          flags |= FLAG_DEFLATE;
        }
      }
      const header = writeHeader(LAYOUT_V3, modeByte, flags, key);
      const envelope =
        mode === 'sealed'
          ? seal(LAYOUT_V3, key.keyObject('seal'), header, payload, context)
          : sign(LAYOUT_V3, key.subkey('sign'), header, payload, context);
      const token = envelope.toString('base64url');
      if (token.length > maxTokenBytes) {
        throw new StateTooLargeError('token', token.length, maxTokenBytes);
      }
      const minted: RequestStateClaims<TBody> = {
        v: REQUEST_STATE_VERSION,
        kid: key.kid,
        iat,
        exp,
        jti: nonceOf(LAYOUT_V3, envelope).toString('base64url'),
        fid: claims.fid,
        hash: claims.hash,
        round: claims.round,
        body: claims.body,
      };
      return { token, claims: minted };
    },

    open(token: string, binding: StateBinding): RequestStateClaims {
      if (typeof token !== 'string') fail('malformed');
      if (token.length > maxTokenBytes) fail('too_large');
      const envelope = decodeWire(token);
      const layout = versionOf(envelope) === LAYOUT_V2.version ? LAYOUT_V2 : LAYOUT_V3;
      const { key, flags } = readHeader(
        envelope,
        layout,
        modeByte,
        FLAG_DEFLATE,
        layout === LAYOUT_V2 ? keyOfV2 : keyOfV3,
      );
      // A binding that cannot be encoded (a NaN or a bigint in the arguments) matches no state.
      const context = attempt(() => contextOf(binding));
      const sealedBytes =
        mode === 'sealed'
          ? unseal(layout, key.keyObject('seal'), envelope, context)
          : verify(layout, key.subkey('sign'), envelope, context);
      const payload = inflate(sealedBytes, flags, maxPayloadBytes);
      // The binding verified with the state, so its dictionary is the one the state was minted with.
      const c = layout === LAYOUT_V2 ? decodePayloadV2(payload) : decodePayload(payload, dictionaryFor(binding));
      const t = now();
      if (t > c.exp) fail('expired');
      if (c.iat > t + skewMs) fail('not_yet_valid');
      return {
        v: layout.version,
        kid: key.kid,
        iat: c.iat,
        exp: c.exp,
        jti: nonceOf(layout, envelope).toString('base64url'),
        fid: c.fid,
        hash: c.hash,
        round: c.round,
        body: c.body,
      };
    },

    sealBlob(plaintext: string, purpose: string, associatedData?: string): string {
      const key = ring.current;
      const header = writeHeader(LAYOUT_V2, BLOB_MODE_BYTE, 0, key);
      const context = blobContext(associatedData);
      return seal(
        LAYOUT_V2,
        key.keyObject(`blob:${purpose}`),
        header,
        Buffer.from(plaintext, 'utf8'),
        context,
      ).toString('base64url');
    },

    openBlob(sealed: string, purpose: string, associatedData?: string): string {
      try {
        if (typeof sealed !== 'string') fail('malformed');
        const envelope = decodeWire(sealed);
        const { key } = readHeader(envelope, LAYOUT_V2, BLOB_MODE_BYTE, 0, keyOfV2);
        return unseal(LAYOUT_V2, key.keyObject(`blob:${purpose}`), envelope, blobContext(associatedData)).toString(
          'utf8',
        );
      } catch (error) {
        // A key this server does not hold is named (its id is no secret); anything else is opaque.
        if (error instanceof InvalidRequestStateError && error.reason === 'unknown_key') throw error;
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

/**
 * The associated data of a state: `canonicalJson([principal, flow, method, target, args])` (an
 * array, so fields cannot run together), with the four strings encoded in one call.
 * @throws TypeError when a field is not a string or the arguments are not JSON.
 */
function bindingBytes(binding: StateBinding): Buffer {
  const { principal, flow, method, target } = binding;
  if (typeof principal !== 'string' || typeof flow !== 'string' || typeof method !== 'string') {
    throw new TypeError('requestState: principal, flow and method must be strings');
  }
  if (typeof target !== 'string') throw new TypeError('requestState: target must be a string');
  const strings = JSON.stringify([principal, flow, method, target]);
  return Buffer.from(`${strings.slice(0, -1)},${canonicalJson(binding.args)}]`, 'utf8');
}

/** A blob's associated data as AEAD context (after the fixed-size header, so unambiguous). */
function blobContext(associatedData: string | undefined): Buffer | undefined {
  if (associatedData === undefined) return undefined;
  if (typeof associatedData !== 'string') throw new TypeError('requestState: associated data must be a string');
  return Buffer.from(associatedData, 'utf8');
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

/** Encode caller-supplied binding data; one that cannot be encoded gets a context no state was sealed with. */
function attempt(compute: () => Buffer): Buffer {
  try {
    return compute();
  } catch {
    return UNENCODABLE;
  }
}

/** Not canonical JSON of any binding (every binding encodes to a JSON array). */
const UNENCODABLE = Buffer.from('\u0000', 'utf8');

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
