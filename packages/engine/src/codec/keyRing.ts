/**
 * The key ring: the master secrets Baton seals with, and the subkeys derived
 * from them. Each master key (at least 32 random bytes, given as base64url in
 * the comma-separated `BATON_KEYS`) yields, through HKDF-SHA256 with salt
 * `baton/v1`, one 32-byte subkey per purpose (`seal`, `sign`, `digest`,
 * `blob:<purpose>`) and an 8-byte key id. The first key mints; every key
 * verifies, so rotating is: prepend a new key, wait one state lifetime (and
 * ledger retention), drop the old one. Subkeys are derived once
 * and cached; master and subkeys live in private fields, so logging a ring
 * prints key ids only.
 */
import { createSecretKey, hkdfSync, type KeyObject, randomBytes } from 'node:crypto';
import { inspect } from 'node:util';

/** Minimum length of a master key, in bytes. */
export const MIN_KEY_BYTES = 32;

/**
 * Fewest distinct byte values a master key must hold (and fewest distinct steps between
 * neighbouring bytes). 32 random bytes hold about 30 distinct values; fewer than 16 happens by
 * chance with a probability far below 2^-100, so a key under it was not drawn at random: all
 * zeros, one repeated byte, a short pattern, a counting sequence.
 */
export const MIN_DISTINCT_KEY_BYTES = 16;

/**
 * Lowest and highest byte of printable ASCII (space to `~`). 32 random bytes all fall in it with a
 * probability of (95/256)^32, about 1.7e-14: a key that does is text (a passphrase, a sentence)
 * given as bytes or encoded as base64url, not random bytes.
 */
const PRINTABLE_ASCII = [0x20, 0x7e] as const;

/**
 * A key as written in `BATON_KEYS` that uses one case of letters only, with `-` and `_` (and
 * `=` padding): words (`correcthorsebatterystaple…`, `correct-horse-battery-…`, `CORRECT_HORSE_…`),
 * not base64url of random bytes. `baton keygen` prints 43 characters drawn from 64; all of them
 * lie in one such set of 28 with a probability of about 6.8e-16.
 */
const ONE_CASE_WORDS = /^(?:[a-z_-]+|[A-Z_-]+)=*$/;

/** The fixed subkey purposes; blob subkeys use `blob:<purpose>`. */
export type KeyPurpose = 'seal' | 'sign' | 'digest' | `blob:${string}`;

const HKDF_SALT = 'baton/v1';
const KID_BYTES = 8;
const BASE64URL = /^[A-Za-z0-9_-]+={0,2}$/;

/** One master key of a ring: its id and its (cached) derived subkeys. */
export class RingKey {
  /** Key id: 8 bytes of HKDF(master, info `kid`), base64url (11 characters). */
  readonly kid: string;
  /** The same key id as raw bytes, as written in envelope headers. */
  readonly kidBytes: Buffer;
  readonly #master: Buffer;
  readonly #subkeys = new Map<string, Buffer>();
  readonly #keyObjects = new Map<string, KeyObject>();

  /** @param master the master secret (copied; at least {@link MIN_KEY_BYTES} bytes, checked by the ring). */
  constructor(master: Uint8Array) {
    this.#master = Buffer.from(master);
    this.kidBytes = derive(this.#master, 'kid', KID_BYTES);
    this.kid = this.kidBytes.toString('base64url');
  }

  /** The 32-byte subkey for `purpose`, derived on first use and cached. */
  subkey(purpose: KeyPurpose): Buffer {
    let key = this.#subkeys.get(purpose);
    if (key === undefined) {
      key = derive(this.#master, purpose, 32);
      this.#subkeys.set(purpose, key);
    }
    return key;
  }

  /**
   * The same subkey as a `KeyObject`, created once: a cipher given a `KeyObject` skips importing
   * raw key bytes on every call (about 2 µs of each AES-GCM seal or open).
   */
  keyObject(purpose: KeyPurpose): KeyObject {
    let key = this.#keyObjects.get(purpose);
    if (key === undefined) {
      key = createSecretKey(this.subkey(purpose));
      this.#keyObjects.set(purpose, key);
    }
    return key;
  }

  /** Never print key material. */
  [inspect.custom](): string {
    return `RingKey { kid: '${this.kid}' }`;
  }

  /** Never serialise key material. */
  toJSON(): { kid: string } {
    return { kid: this.kid };
  }
}

/** An ordered set of master keys: the first mints, all verify. */
export interface KeyRing {
  /** The minting key (the first one given). */
  readonly current: RingKey;
  /** Every key, minting key first. */
  readonly keys: readonly RingKey[];
  /** The key with this id, or `undefined`. */
  byKid(kid: string): RingKey | undefined;
}

/**
 * Build a key ring from master secrets, minting key first.
 * @param secrets base64url strings (as in `BATON_KEYS`) or raw bytes; each at least 32 bytes.
 * @throws Error naming the offending key by position (never by value) when a key is
 *   missing, not base64url, shorter than 32 bytes, does not look random (see
 *   {@link weakKeyReason}) or a duplicate.
 */
export function createKeyRing(secrets: readonly (string | Uint8Array)[]): KeyRing {
  if (secrets.length === 0) throw new Error('BATON_KEYS: at least one key is required');
  const keys = secrets.map((secret, index) => new RingKey(decodeSecret(secret, index + 1)));
  const byKid = new Map<string, RingKey>();
  keys.forEach((key, index) => {
    if (byKid.has(key.kid)) throw new Error(`BATON_KEYS: key ${index + 1} is a duplicate of an earlier key`);
    byKid.set(key.kid, key);
  });
  return { current: keys[0]!, keys, byKid: (kid) => byKid.get(kid) };
}

/**
 * Split the `BATON_KEYS` environment value (comma-separated base64url secrets,
 * minting key first; whitespace and empty entries are ignored) into a key ring.
 * @throws Error when the value is empty or a key is invalid (see {@link createKeyRing}).
 */
export function parseKeyRingEnv(value: string | undefined): KeyRing {
  const secrets = (value ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part.length > 0);
  return createKeyRing(secrets);
}

/**
 * A fresh random 32-byte master key, base64url: a valid `BATON_KEYS` entry. Drawn again in the
 * (about 1.7e-14) case that random bytes fail a rule of {@link weakKeyReason} or
 * {@link weakKeyTextReason}, so every key it returns is accepted.
 */
export function generateKey(): string {
  for (;;) {
    const bytes = randomBytes(32);
    const text = bytes.toString('base64url');
    if (weakKeyReason(bytes) === undefined && weakKeyTextReason(text) === undefined) return text;
  }
}

function decodeSecret(secret: string | Uint8Array, position: number): Uint8Array {
  let bytes: Uint8Array;
  if (typeof secret === 'string') {
    if (!BASE64URL.test(secret)) throw new Error(`BATON_KEYS: key ${position} is not base64url (A-Z a-z 0-9 - _)`);
    bytes = Buffer.from(secret, 'base64url');
  } else if (secret instanceof Uint8Array) {
    bytes = secret;
  } else {
    throw new Error(`BATON_KEYS: key ${position} is neither a base64url string nor bytes`);
  }
  if (bytes.length < MIN_KEY_BYTES) {
    throw new Error(`BATON_KEYS: key ${position} is ${bytes.length} bytes; at least ${MIN_KEY_BYTES} are required`);
  }
  const weak = weakKeyReason(bytes) ?? (typeof secret === 'string' ? weakKeyTextReason(secret) : undefined);
  if (weak !== undefined) {
    throw new Error(
      `BATON_KEYS: key ${position} does not look random (${weak}); use random bytes, e.g. from "baton keygen"`,
    );
  }
  return bytes;
}

/**
 * Why a master key is plainly not random, or `undefined` when it passes. A cheap sanity check
 * for operator mistakes, not an entropy estimate: it refuses a key with fewer than
 * {@link MIN_DISTINCT_KEY_BYTES} distinct byte values (all zeros, one repeated byte), a key that
 * repeats a shorter block, and a key whose steps between neighbouring bytes take fewer than
 * {@link MIN_DISTINCT_KEY_BYTES} values (a counting sequence), and a key whose bytes are all
 * printable ASCII (0x20 to 0x7e: text, such as a passphrase, rather than random bytes; 32 random
 * bytes do so with a probability of (95/256)^32, about 1.7e-14). The reason never quotes the key.
 * A key written as text is also checked by {@link weakKeyTextReason}.
 */
export function weakKeyReason(bytes: Uint8Array): string | undefined {
  const distinct = new Set(bytes).size;
  if (distinct < MIN_DISTINCT_KEY_BYTES) {
    return `only ${distinct} distinct byte value${distinct === 1 ? '' : 's'}; at least ${MIN_DISTINCT_KEY_BYTES} are required`;
  }
  for (let period = 1; period <= bytes.length / 2; period++) {
    let repeats = true;
    for (let i = period; i < bytes.length && repeats; i++) repeats = bytes[i] === bytes[i - period];
    if (repeats) return `it repeats a block of ${period} bytes`;
  }
  const steps = new Set<number>();
  for (let i = 1; i < bytes.length; i++) steps.add((bytes[i]! - bytes[i - 1]! + 256) % 256);
  if (steps.size < MIN_DISTINCT_KEY_BYTES) return 'its bytes follow a simple sequence';
  if (bytes.every((byte) => byte >= PRINTABLE_ASCII[0] && byte <= PRINTABLE_ASCII[1])) {
    return 'its bytes are all printable text, like a passphrase';
  }
  return undefined;
}

/**
 * Why a key as written (base64url text, before decoding) is plainly words rather than the
 * encoding of random bytes, or `undefined` when it passes: a key made only of lower-case letters,
 * `-` and `_`, or only of upper-case letters, `-` and `_` (then `=` padding), such as
 * `correcthorsebatterystaplecorrecthorsebatter`. The 43 characters `baton keygen` prints do so
 * with a probability of about 6.8e-16 (28 of 64 symbols per character, 42 times, and 6 or 7 of
 * the 16 possible last characters). The reason never quotes the key.
 */
export function weakKeyTextReason(text: string): string | undefined {
  return ONE_CASE_WORDS.test(text)
    ? 'it is written in letters of one case only, like a passphrase, not base64url of random bytes'
    : undefined;
}

function derive(master: Buffer, info: string, length: number): Buffer {
  return Buffer.from(hkdfSync('sha256', master, HKDF_SALT, info, length));
}
