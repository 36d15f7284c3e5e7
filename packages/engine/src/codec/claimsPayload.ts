/**
 * The payload of a version-2 requestState: the claims a codec seals, laid out
 * as a fixed 48-byte binary prefix followed by the body as JSON. Fixed fields
 * cost fixed bytes and no parsing: `iat` and `exp` (ms since epoch, 48-bit),
 * `round` (32-bit), and the 128-bit `fid` and definition `hash` (base64url on
 * the API side, raw bytes here). Decoding runs only on authenticated bytes;
 * its checks catch a codec bug, not an attacker.
 */
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
 * Encode claims.
 * @throws TypeError for ids that are not 16 bytes of canonical base64url, a round that is not a
 *   32-bit unsigned integer, times out of range, or a body JSON cannot carry (non-finite numbers).
 */
export function encodePayload(claims: PayloadClaims): Buffer {
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

/** Decode authenticated payload bytes. */
export function decodePayload(bytes: Buffer): PayloadClaims {
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
