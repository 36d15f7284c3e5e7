/**
 * Public API of the requestState codec: the codec factory, the key ring
 * (built from `BATON_KEYS`), canonical JSON for digests, and the codec's types.
 * Everything else in this folder is internal.
 */
export { canonicalJson, MAX_CANONICAL_DEPTH } from './canonicalJson.js';
export {
  createKeyRing,
  generateKey,
  type KeyPurpose,
  type KeyRing,
  MIN_DISTINCT_KEY_BYTES,
  MIN_KEY_BYTES,
  parseKeyRingEnv,
  RingKey,
  weakKeyReason,
  weakKeyTextReason,
} from './keyRing.js';
export {
  createRequestStateCodec,
  REQUEST_STATE_VERSION,
  type RequestStateCodecOptions,
} from './requestStateCodec.js';
export type {
  CodecMode,
  MintClaims,
  MintOptions,
  RequestStateClaims,
  RequestStateCodec,
  StateBinding,
} from './types.js';
