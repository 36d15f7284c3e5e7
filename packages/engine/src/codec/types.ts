/**
 * The shapes of the requestState codec: what a caller binds a state to, the
 * claims sealed inside it, and the codec's public interface. The format and
 * cryptography live in `requestStateCodec.ts`; this module only names things.
 */

/**
 * What a requestState is bound to. Every field is compared on open; a state
 * minted for one binding is rejected for any other. Treat a binding object as
 * immutable: a codec may cache its digests for the object's lifetime.
 */
export interface StateBinding {
  /** The authenticated principal id (never stored raw: only a keyed hash is sealed). */
  readonly principal: string;
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
  /** Flow-instance id: the same for every round of one run (base64url, 128 bit). */
  readonly fid: string;
  /** Flow name. */
  readonly flow: string;
  /** The flow's definition hash. */
  readonly hash: string;
  /** Round number, starting at 1 for the state minted by the first round. */
  readonly round: number;
  /** The request keys this state is waiting for. */
  readonly pending: readonly string[];
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
  /** Random 128-bit id of this state (base64url): what a ledger redeems. */
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
   */
  mint<TBody>(
    binding: StateBinding,
    claims: MintClaims<TBody>,
    options?: MintOptions,
  ): { token: string; claims: RequestStateClaims<TBody> };
  /**
   * Open a state echoed by a client. Checks, in order: wire size and alphabet,
   * header, key id, integrity (constant time), decompressed size, JSON shape,
   * time window (with clock skew), principal and binding (constant time).
   * @throws InvalidRequestStateError with a reason code on any failure.
   */
  open(token: string, binding: StateBinding): RequestStateClaims;
  /** Seal an arbitrary string (for ledger outcomes) with a purpose-bound AEAD subkey. */
  sealBlob(plaintext: string, purpose: string): string;
  /**
   * Open a blob from {@link RequestStateCodec.sealBlob}; any key of the ring opens it, but only
   * with the same `purpose`. Every failure throws InvalidRequestStateError('bad_integrity').
   */
  openBlob(sealed: string, purpose: string): string;
  /**
   * Keyed digest (base64url) of any JSON value, canonicalised; for response digests. Keyed with
   * the minting key: digests of the same value differ across a key rotation.
   */
  digest(value: unknown, purpose: string): string;
}
