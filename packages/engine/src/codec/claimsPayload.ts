/**
 * The payload of a requestState: the claims a codec seals. Format version 3
 * (written): `iat` (ms since epoch, 48-bit), the lifetime `exp - iat` (a
 * varint: whole seconds times 2, or ms times 2 plus 1), `round` (varint), the
 * 128-bit `fid` and definition `hash` (raw bytes here, base64url on the API
 * side), then the body in the compact binary encoding of `compactValue.ts`
 * (absent when the body is `undefined`). Version 2 (still read during the
 * transition): a fixed 48-byte prefix (`iat`, `exp` 48-bit each, `round`
 * 32-bit, `fid`, `hash`) and the body as JSON. Decoding runs only on
 * authenticated bytes; its checks catch a codec bug, not an attacker, and
 * still refuse anything malformed with InvalidRequestStateError.
 */
import { type Dictionary, decodeValue, encodeValue } from './compactValue.js';
import { fail } from './envelope.js';

/** Bytes of the fixed prefix. */
const FIXED_BYTES = 48;
const ID_BYTES = 16;
const ID_CHARS = 22;
const MAX_UINT48 = 2 ** 48 - 1;
const MAX_UINT32 = 2 ** 32 - 1;

/** The claims in a payload. */
export interface PayloadClaims {
  readonly iat: number;
  readonly exp: number;
  readonly round: number;
  /** base64url of 16 bytes. */
  readonly fid: string;
  /** base64url of 16 bytes. */
  readonly hash: string;
  readonly body: unknown;
}

/**
 * Encode claims in format version 2 (kept for the tests of the transition: states minted before
 * an upgrade).
 * @throws TypeError for ids that are not 16 bytes of canonical base64url, a round that is not a
 *   32-bit unsigned integer, times out of range, or a body JSON cannot carry (non-finite numbers).
 */
export function encodePayloadV2(claims: PayloadClaims): Buffer {
  const { iat, exp, round } = claims;
  if (!Number.isInteger(round) || round < 0 || round > MAX_UINT32) {
    throw new TypeError('requestState: round must be an integer from 0 to 2^32 - 1');
  }
  if (!isTime(iat) || !isTime(exp)) throw new TypeError('requestState: iat and exp must be ms since epoch');
  const body = claims.body === undefined ? '' : bodyJson(claims.body);
  const out = Buffer.allocUnsafe(FIXED_BYTES + Buffer.byteLength(body));
  out.writeUIntBE(iat, 0, 6);
  out.writeUIntBE(exp, 6, 6);
  out.writeUInt32BE(round, 12);
  writeId(out, 16, claims.fid, 'fid');
  writeId(out, 32, claims.hash, 'hash');
  out.write(body, FIXED_BYTES, 'utf8');
  return out;
}

/** Decode authenticated version-2 payload bytes. */
export function decodePayloadV2(bytes: Buffer): PayloadClaims {
  if (bytes.length < FIXED_BYTES) fail('malformed');
  let body: unknown;
  if (bytes.length > FIXED_BYTES) {
    try {
      body = JSON.parse(bytes.toString('utf8', FIXED_BYTES));
    } catch {
      fail('malformed');
    }
  }
  return {
    iat: bytes.readUIntBE(0, 6),
    exp: bytes.readUIntBE(6, 6),
    round: bytes.readUInt32BE(12),
    fid: bytes.toString('base64url', 16, 32),
    hash: bytes.toString('base64url', 32, 48),
    body,
  };
}

/**
 * Encode claims in format version 3; strings of the body equal to one of `dictionary` travel as
 * references to it.
 * @throws TypeError for ids that are not 16 bytes of canonical base64url, a round that is not a
 *   32-bit unsigned integer, times out of range or `exp` before `iat`, or a body JSON cannot
 *   carry (non-finite numbers, bigints, cycles, nesting past 512 levels).
 */
export function encodePayload(claims: PayloadClaims, dictionary: Dictionary): Buffer {
  const { iat, exp, round } = claims;
  if (!Number.isInteger(round) || round < 0 || round > MAX_UINT32) {
    throw new TypeError('requestState: round must be an integer from 0 to 2^32 - 1');
  }
  if (!isTime(iat) || !isTime(exp) || exp < iat) {
    throw new TypeError('requestState: iat and exp must be ms since epoch, exp not before iat');
  }
  const lifetime = exp - iat;
  const head = Buffer.allocUnsafe(6 + 8 + 5 + 2 * ID_BYTES);
  head.writeUIntBE(iat, 0, 6);
  let at = writeVarint(head, 6, lifetime % 1000 === 0 ? (lifetime / 1000) * 2 : lifetime * 2 + 1);
  at = writeVarint(head, at, round);
  writeId(head, at, claims.fid, 'fid');
  writeId(head, at + ID_BYTES, claims.hash, 'hash');
  const fixed = head.subarray(0, at + 2 * ID_BYTES);
  return claims.body === undefined ? fixed : encodeValue(claims.body, dictionary, fixed);
}

/** Decode authenticated version-3 payload bytes, with the dictionary of the state's binding. */
export function decodePayload(bytes: Buffer, dictionary: Dictionary): PayloadClaims {
  if (bytes.length < 6) fail('malformed');
  const iat = bytes.readUIntBE(0, 6);
  const [lifetime, afterLifetime] = readVarint(bytes, 6);
  const [round, afterRound] = readVarint(bytes, afterLifetime);
  const idsEnd = afterRound + 2 * ID_BYTES;
  if (bytes.length < idsEnd || round > MAX_UINT32) fail('malformed');
  const exp = iat + (lifetime % 2 === 0 ? (lifetime / 2) * 1000 : (lifetime - 1) / 2);
  return {
    iat,
    exp,
    round,
    fid: bytes.toString('base64url', afterRound, afterRound + ID_BYTES),
    hash: bytes.toString('base64url', afterRound + ID_BYTES, idsEnd),
    body: bytes.length > idsEnd ? decodeValue(bytes.subarray(idsEnd), dictionary) : undefined,
  };
}

/** Write an unsigned LEB128 varint of a safe integer; returns the offset after it. */
function writeVarint(out: Buffer, offset: number, value: number): number {
  let at = offset;
  while (value >= 0x80) {
    out[at++] = (value % 0x80) | 0x80;
    value = Math.floor(value / 0x80);
  }
  out[at++] = value;
  return at;
}

/** Read an unsigned LEB128 varint (at most 8 bytes, canonical); returns it and the offset after it. */
function readVarint(bytes: Buffer, offset: number): [number, number] {
  let value = 0;
  let scale = 1;
  for (let at = offset; at < offset + 8 && at < bytes.length; at++) {
    const b = bytes[at]!;
    value += (b & 0x7f) * scale;
    if (b < 0x80) {
      if ((b === 0 && at > offset) || value > Number.MAX_SAFE_INTEGER) break;
      return [value, at + 1];
    }
    scale *= 0x80;
  }
  return fail('malformed');
}

function isTime(value: number): boolean {
  return Number.isInteger(value) && value >= 0 && value <= MAX_UINT48;
}

function writeId(out: Buffer, offset: number, id: string, name: string): void {
  const canonical =
    typeof id === 'string' &&
    id.length === ID_CHARS &&
    out.write(id, offset, ID_BYTES, 'base64url') === ID_BYTES &&
    out.toString('base64url', offset, offset + ID_BYTES) === id;
  if (!canonical) throw new TypeError(`requestState: ${name} must be 16 bytes in canonical base64url (22 characters)`);
}

/**
 * The body as JSON, refusing non-finite numbers (JSON would turn them into `null`). JSON without
 * a single `null` cannot have had one, so the replacer only runs on bodies that hold a `null`.
 */
function bodyJson(body: unknown): string {
  const json: string | undefined = JSON.stringify(body);
  if (json === undefined) throw new TypeError('requestState: the body is not a JSON value');
  return json.includes('null') ? JSON.stringify(body, finiteNumbersOnly) : json;
}

/** JSON.stringify replacer: a non-finite number would come back as `null`, so refuse it. */
function finiteNumbersOnly(_key: string, value: unknown): unknown {
  if (typeof value === 'number' && !Number.isFinite(value)) {
    throw new TypeError('requestState: the body holds a non-finite number, which JSON cannot carry');
  }
  return value;
}
