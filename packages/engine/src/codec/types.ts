/**
 * The shapes of the requestState codec: what a caller binds a state to, the
 * claims sealed inside it, and the codec's public interface. The format and
 * cryptography live in `requestStateCodec.ts`; this module only names things.
 */

/**
 * What a requestState is bound to. None of it is stored in the state: it is
 * authenticated alongside it (associated data), so a state minted for one
 * binding fails integrity for any other. Treat a binding object as immutable:
 * a codec may cache its encoding for the object's lifetime.
 */
export interface StateBinding {
  /** The authenticated principal id (never stored, raw or hashed). */
  readonly principal: string;
  /** The flow the state belongs to. */
  readonly flow: string;
  /** The MCP method: `tools/call`, `prompts/get` or `resources/read`. */
  readonly method: string;
  /** The tool or prompt name, or the resource URI. */
  readonly target: string;
  /** The request's arguments; compared as canonical JSON (key order does not matter). */
  readonly args: unknown;
}

/** Sealing mode: AES-256-GCM (confidential + integrity) or HMAC-SHA256 (integrity only). */
export type CodecMode = 'sealed' | 'signed';

/** The claims a caller provides when minting. Times are the codec's own. */
export interface MintClaims<TBody = unknown> {
  /** Flow-instance id: the same for every round of one run (base64url of 16 bytes, 22 characters). */
  readonly fid: string;
  /** The flow's definition hash (base64url of 16 bytes, 22 characters). */
  readonly hash: string;
  /** Round number (0 to 2^32 - 1), starting at 1 for the state minted by the first round. */
  readonly round: number;
  /** Engine payload (snapshot, timers, answers held): JSON-serialisable. */
  readonly body: TBody;
}

/** Every claim of an opened state. */
export interface RequestStateClaims<TBody = unknown> extends MintClaims<TBody> {
  /** Envelope format version. */
  readonly v: number;
  /** Id of the key that minted the state. */
  readonly kid: string;
  /** Issued at, ms since epoch. */
  readonly iat: number;
  /** Expires at, ms since epoch. */
  readonly exp: number;
  /** Random 128-bit id of this state (base64url, 22 characters; 96-bit, 16, in format version 2): what a ledger redeems. */
  readonly jti: string;
}

/** Options for {@link RequestStateCodec.mint}. */
export interface MintOptions {
  /** Lifetime in seconds; defaults to the codec's `ttlSeconds`. */
  readonly ttlSeconds?: number;
}

/** A requestState codec: mints and opens opaque, bound, expiring states. */
export interface RequestStateCodec {
  /** The mode states are minted in (opening accepts only this mode). */
  readonly mode: CodecMode;
  /** Id of the key that mints (the first of the ring). */
  readonly currentKeyId: string;
  /**
   * Mint a state bound to `binding`.
   * @returns the wire string (base64url) and the claims it carries.
   * @throws StateTooLargeError (a RangeError) when the payload or the wire string passes its cap.
   */
  mint<TBody>(
    binding: StateBinding,
    claims: MintClaims<TBody>,
    options?: MintOptions,
  ): { token: string; claims: RequestStateClaims<TBody> };
  /**
   * Open a state echoed by a client. Checks, in order: wire size and alphabet,
   * header, key id, integrity of the state and its binding together (constant
   * time), decompressed size, payload shape, time window (with clock skew).
   * @throws InvalidRequestStateError with a reason code on any failure.
   */
  open(token: string, binding: StateBinding): RequestStateClaims;
  /**
   * Seal an arbitrary string (for ledger outcomes) with a purpose-bound AEAD subkey. The optional
   * `associatedData` (say, the id of the row the blob is stored under) is authenticated with it
   * but not stored: the blob opens only where the same associated data is given again.
   */
  sealBlob(plaintext: string, purpose: string, associatedData?: string): string;
  /**
   * Open a blob from {@link RequestStateCodec.sealBlob}; any key of the ring opens it, but only
   * with the same `purpose` and `associatedData` (absent and `''` are the same). A blob sealed
   * with a key the ring does not hold throws InvalidRequestStateError('unknown_key') with its
   * `keyId`; every other failure throws InvalidRequestStateError('bad_integrity').
   */
  openBlob(sealed: string, purpose: string, associatedData?: string): string;
  /**
   * Keyed digest (base64url) of any JSON value, canonicalised; for response digests. Keyed with
   * the minting key: digests of the same value differ across a key rotation.
   */
  digest(value: unknown, purpose: string): string;
}
