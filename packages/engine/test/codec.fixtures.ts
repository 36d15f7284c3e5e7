/**
 * Shared fixtures for the codec tests: fixed master keys, a movable clock, a
 * realistic binding and claims (a ~300-byte body), and a helper that captures
 * the InvalidRequestStateError a call throws.
 */
import { createHash } from 'node:crypto';
import { expect } from 'vitest';
import {
  createRequestStateCodec,
  type KeyRing,
  type MintClaims,
  type RequestStateCodec,
  type RequestStateCodecOptions,
  RingKey,
  type StateBinding,
} from '../src/codec/index.js';
import { INVALID_REQUEST_STATE_MESSAGE, InvalidRequestStateError, type InvalidStateReason } from '../src/errors.js';

/** Fixed 32-byte master keys (base64url), so failures reproduce; random-looking, as a ring requires. */
export const KEY_A = createHash('sha256').update('baton test key A').digest('base64url');
export const KEY_B = createHash('sha256').update('baton test key B').digest('base64url');
/**
 * The master key the golden tokens were minted with (32 bytes of 0xa1, from before the ring
 * refused keys that do not look random): build its ring with {@link legacyRing}.
 */
export const GOLDEN_KEY = Buffer.alloc(32, 0xa1);

/** A one-key ring built without the ring's randomness check (for the golden tokens only). */
export function legacyRing(master: Uint8Array): KeyRing {
  const key = new RingKey(master);
  return { current: key, keys: [key], byKid: (kid) => (kid === key.kid ? key : undefined) };
}

/** The epoch the test clock starts at (ms). */
export const T0 = 1_750_000_000_000;

/** A clock the tests move by hand. */
export function testClock(start = T0) {
  const clock = { t: start, now: () => clock.t };
  return clock;
}

/** A codec over ring [A] with a test clock, unless options say otherwise. */
export function makeCodec(options: Partial<RequestStateCodecOptions> = {}): {
  codec: RequestStateCodec;
  clock: ReturnType<typeof testClock>;
} {
  const clock = testClock();
  const codec = createRequestStateCodec({ keys: [KEY_A], now: clock.now, ...options });
  return { codec, clock };
}

/** A realistic binding. */
export const BINDING: StateBinding = {
  principal: 'user:alice@example.com',
  flow: 'book_flight',
  method: 'tools/call',
  target: 'book_flight',
  args: { from: 'CDG', to: 'SFO', date: '2026-03-14', passengers: [{ name: 'Alice', age: 34 }] },
};

/** A realistic body of about 300 bytes of JSON. */
export const BODY = {
  value: 'awaitingSeat',
  context: { from: 'CDG', to: 'SFO', date: '2026-03-14', fare: 1234.5, currency: 'EUR', quoteId: 'q_8c1f2e9a' },
  children: {},
  timers: [{ id: 'holdExpires', at: T0 + 600_000 }],
  answers: { confirm: { action: 'accept', content: { ok: true } } },
  historyValue: {},
  note: 'hold seats 14A and 14B until the passenger confirms the fare',
};

/** Realistic mint claims. */
export const CLAIMS: MintClaims<typeof BODY> = {
  fid: 'q7Hk2mQ1v0Zl9XyJc4Rt8w',
  hash: 'LG7iB6BYRTlHWl9YbLGdwQ',
  round: 2,
  body: BODY,
};

/** Run `fn`, expect an InvalidRequestStateError with the fixed message, and return its reason. */
export function rejection(fn: () => unknown): InvalidStateReason {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidRequestStateError);
    expect((error as Error).message).toBe(INVALID_REQUEST_STATE_MESSAGE);
    return (error as InvalidRequestStateError).reason;
  }
  throw new Error('expected an InvalidRequestStateError, but nothing was thrown');
}
