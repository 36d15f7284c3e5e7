import { randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createKeyRing, createRequestStateCodec } from '../src/codec/index.js';
import type { InvalidRequestStateError } from '../src/errors.js';
import {
  BINDING,
  BODY,
  CLAIMS,
  GOLDEN_KEY,
  KEY_A,
  KEY_B,
  legacyRing,
  makeCodec,
  rejection,
  T0,
} from './codec.fixtures.js';

const MODES = ['sealed', 'signed'] as const;
const decoded = (token: string) => Buffer.from(token, 'base64url');
/** The header flags of a version-3 token (the high nibble of its second byte). */
const flagsOf = (token: string) => decoded(token)[1]! >> 4;

describe.each(MODES)('requestState codec, %s mode', (mode) => {
  it('round-trips: every claim comes back intact', () => {
    const { codec } = makeCodec({ mode });
    const { token, claims } = codec.mint(BINDING, CLAIMS);
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(claims).toEqual({ ...CLAIMS, v: 3, kid: codec.currentKeyId, iat: T0, exp: T0 + 1_800_000, jti: claims.jti });
    // 128 random bits.
    expect(claims.jti).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(codec.open(token, BINDING)).toEqual(claims);
    expect(codec.mode).toBe(mode);
  });

  it('gives every mint a fresh jti (and a different token)', () => {
    const { codec } = makeCodec({ mode });
    const minted = Array.from({ length: 200 }, () => codec.mint(BINDING, CLAIMS));
    expect(new Set(minted.map((m) => m.claims.jti)).size).toBe(200);
    expect(new Set(minted.map((m) => m.token)).size).toBe(200);
  });

  it('preserves fid and round across rounds, and a per-mint ttl', () => {
    const { codec } = makeCodec({ mode });
    const first = codec.mint(BINDING, { ...CLAIMS, round: 1 });
    const second = codec.mint(BINDING, { ...CLAIMS, round: 2 }, { ttlSeconds: 60 });
    expect(codec.open(first.token, BINDING)).toMatchObject({ fid: CLAIMS.fid, round: 1 });
    expect(codec.open(second.token, BINDING)).toMatchObject({ fid: CLAIMS.fid, round: 2, exp: T0 + 60_000 });
  });

  it('round-trips an undefined body and no-argument calls', () => {
    const { codec } = makeCodec({ mode });
    const binding = { ...BINDING, args: undefined };
    const { token } = codec.mint(binding, { ...CLAIMS, body: undefined });
    expect(codec.open(token, binding).body).toBeUndefined();
  });

  describe('time window', () => {
    it('opens until exp inclusive, then rejects as expired', () => {
      const { codec, clock } = makeCodec({ mode, ttlSeconds: 600 });
      const { token } = codec.mint(BINDING, CLAIMS);
      clock.t = T0 + 600_000;
      expect(codec.open(token, BINDING).exp).toBe(T0 + 600_000);
      clock.t += 1;
      expect(rejection(() => codec.open(token, BINDING))).toBe('expired');
    });

    it('accepts an iat within the clock skew and rejects one beyond it', () => {
      const { codec, clock } = makeCodec({ mode, clockSkewSeconds: 30 });
      const { token } = codec.mint(BINDING, CLAIMS);
      clock.t = T0 - 30_000;
      expect(codec.open(token, BINDING).iat).toBe(T0);
      clock.t -= 1;
      expect(rejection(() => codec.open(token, BINDING))).toBe('not_yet_valid');
    });
  });

  describe('binding', () => {
    const { codec } = makeCodec({ mode });
    const { token } = codec.mint(BINDING, CLAIMS);
    // The binding is authenticated with the state, not stored in it: a mismatch fails integrity.

    it('rejects another principal', () => {
      expect(rejection(() => codec.open(token, { ...BINDING, principal: 'user:mallory' }))).toBe('bad_integrity');
      expect(rejection(() => codec.open(token, { ...BINDING, principal: '' }))).toBe('bad_integrity');
    });

    it('rejects another flow, method, target or arguments', () => {
      expect(rejection(() => codec.open(token, { ...BINDING, flow: 'cancel_flight' }))).toBe('bad_integrity');
      expect(rejection(() => codec.open(token, { ...BINDING, method: 'prompts/get' }))).toBe('bad_integrity');
      expect(rejection(() => codec.open(token, { ...BINDING, target: 'cancel_flight' }))).toBe('bad_integrity');
      expect(rejection(() => codec.open(token, { ...BINDING, args: { ...(BINDING.args as object), to: 'LAX' } }))).toBe(
        'bad_integrity',
      );
      expect(rejection(() => codec.open(token, { ...BINDING, args: undefined }))).toBe('bad_integrity');
    });

    it('rejects unencodable bindings without leaking another error type', () => {
      expect(rejection(() => codec.open(token, { ...BINDING, args: { n: Number.NaN } }))).toBe('bad_integrity');
      expect(rejection(() => codec.open(token, { ...BINDING, args: { n: 1n } }))).toBe('bad_integrity');
      expect(rejection(() => codec.open(token, { ...BINDING, principal: undefined as unknown as string }))).toBe(
        'bad_integrity',
      );
    });

    it('accepts the same arguments in another key order', () => {
      const args = { passengers: [{ age: 34, name: 'Alice' }], date: '2026-03-14', to: 'SFO', from: 'CDG' };
      expect(codec.open(token, { ...BINDING, args }).fid).toBe(CLAIMS.fid);
    });

    it('does not confuse method and target (the binding is a JSON array)', () => {
      const a = codec.mint({ ...BINDING, method: 'a,b', target: 'c' }, CLAIMS).token;
      expect(rejection(() => codec.open(a, { ...BINDING, method: 'a', target: 'b,c' }))).toBe('bad_integrity');
      expect(codec.open(a, { ...BINDING, method: 'a,b', target: 'c' }).fid).toBe(CLAIMS.fid);
    });

    it('stores neither the principal nor the arguments, even in signed (readable) states', () => {
      const { codec: plain } = makeCodec({ mode, compressThresholdBytes: Number.POSITIVE_INFINITY });
      const binding = { ...BINDING, args: { ticket: 'CHG-unique-7f3' } };
      const bytes = decoded(plain.mint(binding, CLAIMS).token).toString('latin1');
      for (const bound of ['alice', 'book_flight', 'tools/call', 'CHG-unique']) expect(bytes).not.toContain(bound);
    });
  });

  describe('key rotation', () => {
    it('opens a state minted with [A] with ring [B, A]', () => {
      const { codec: old } = makeCodec({ mode, keys: [KEY_A] });
      const { codec: rotated } = makeCodec({ mode, keys: [KEY_B, KEY_A] });
      const { token } = old.mint(BINDING, CLAIMS);
      expect(rotated.currentKeyId).not.toBe(old.currentKeyId);
      expect(rotated.open(token, BINDING).kid).toBe(old.currentKeyId);
      expect(rotated.mint(BINDING, CLAIMS).claims.kid).toBe(rotated.currentKeyId);
    });

    it('does not open a state minted with [B, A] with ring [A]', () => {
      const { codec: rotated } = makeCodec({ mode, keys: [KEY_B, KEY_A] });
      const { codec: old } = makeCodec({ mode, keys: [KEY_A] });
      expect(rejection(() => old.open(rotated.mint(BINDING, CLAIMS).token, BINDING))).toBe('unknown_key');
      try {
        old.open(rotated.mint(BINDING, CLAIMS).token, BINDING);
      } catch (error) {
        // A state carries the first 4 bytes of the id: the 5 characters they fix, then an ellipsis.
        expect((error as InvalidRequestStateError).keyId).toBe(`${rotated.currentKeyId.slice(0, 5)}…`);
      }
    });

    it('accepts a prebuilt KeyRing', () => {
      const ring = createKeyRing([KEY_A]);
      const { codec } = makeCodec({ mode, keys: ring });
      const { codec: fromSecrets } = makeCodec({ mode, keys: [KEY_A] });
      expect(codec.open(fromSecrets.mint(BINDING, CLAIMS).token, BINDING).fid).toBe(CLAIMS.fid);
    });
  });

  describe('size caps', () => {
    it('rejects an oversized wire string as too_large before decoding it', () => {
      const { codec } = makeCodec({ mode, maxTokenBytes: 1000 });
      expect(rejection(() => codec.open('A'.repeat(1001), BINDING))).toBe('too_large');
      // Not even the alphabet is looked at: the length check comes first.
      expect(rejection(() => codec.open('!'.repeat(1001), BINDING))).toBe('too_large');
      expect(rejection(() => codec.open('!'.repeat(1000), BINDING))).toBe('malformed');
    });

    it('fails fast with payload_too_large on a decompression bomb that carries a valid MAC', () => {
      // A test-only bomb, built through the codec itself: 8 MiB of one character compresses to ~8 KiB.
      const wide = { mode, maxPayloadBytes: 64 << 20, maxTokenBytes: 1 << 20, compressThresholdBytes: 256 };
      const { codec: maker } = makeCodec(wide);
      const { token } = maker.mint(BINDING, { ...CLAIMS, body: 'a'.repeat(8 << 20) });
      expect(token.length).toBeLessThan(40_000);
      expect(flagsOf(token)).toBe(1); // the compressed flag
      const { codec } = makeCodec({ mode, maxTokenBytes: 1 << 20 }); // same key, default 256 KiB cap
      const started = performance.now();
      expect(rejection(() => codec.open(token, BINDING))).toBe('payload_too_large');
      // The reason proves inflation stopped at the cap; the time is only a bound against hanging,
      // loose enough for a loaded machine.
      expect(performance.now() - started).toBeLessThan(5000);
      expect(maker.open(token, BINDING).body).toHaveLength(8 << 20);
    });

    it('refuses to mint what it could not open', () => {
      const { codec } = makeCodec({ mode, maxTokenBytes: 500 });
      expect(() => codec.mint(BINDING, { ...CLAIMS, body: randomBytes(1000).toString('hex') })).toThrow(
        /maxTokenBytes is 500/,
      );
      const { codec: small } = makeCodec({ mode, maxPayloadBytes: 1000 });
      expect(() => small.mint(BINDING, { ...CLAIMS, body: 'a'.repeat(2000) })).toThrow(/maxPayloadBytes is 1000/);
    });
  });

  describe('compression', () => {
    it('deflates only from the threshold on and only when it pays', () => {
      const { codec } = makeCodec({ mode, compressThresholdBytes: 256 });
      const small = codec.mint(BINDING, { ...CLAIMS, body: { x: 1 } }).token;
      const repetitive = codec.mint(BINDING, { ...CLAIMS, body: 'abc'.repeat(500) }).token;
      const random = codec.mint(BINDING, { ...CLAIMS, body: [...Array(300)].map(() => Math.random()) }).token;
      expect(flagsOf(small)).toBe(0);
      expect(flagsOf(repetitive)).toBe(1);
      expect(repetitive.length).toBeLessThan(600);
      expect(codec.open(repetitive, BINDING).body).toBe('abc'.repeat(500));
      expect(codec.open(random, BINDING).body).toHaveLength(300);
    });

    it('by default deflates signed states only (a client controls part of a sealed body)', () => {
      const { codec } = makeCodec({ mode });
      const flag = flagsOf(codec.mint(BINDING, { ...CLAIMS, body: 'abc'.repeat(500) }).token);
      expect(flag).toBe(mode === 'signed' ? 1 : 0);
    });

    it('never deflates with compressThresholdBytes: Infinity', () => {
      const { codec } = makeCodec({ mode, compressThresholdBytes: Number.POSITIVE_INFINITY });
      expect(flagsOf(codec.mint(BINDING, { ...CLAIMS, body: 'abc'.repeat(500) }).token)).toBe(0);
    });
  });

  it('rejects a state minted in the other mode with the same keys', () => {
    const { codec } = makeCodec({ mode });
    const { codec: other } = makeCodec({ mode: mode === 'sealed' ? 'signed' : 'sealed' });
    expect(rejection(() => codec.open(other.mint(BINDING, CLAIMS).token, BINDING))).toBe('malformed');
  });

  it('rejects a foreign ring whose key id collides (integrity, not the kid, decides)', () => {
    // Same kid bytes but another key is not constructible through HKDF; simulate with a forged header.
    const { codec } = makeCodec({ mode });
    const { codec: foreign } = makeCodec({ mode, keys: [KEY_B] });
    const bytes = decoded(foreign.mint(BINDING, CLAIMS).token);
    decoded(codec.mint(BINDING, CLAIMS).token).copy(bytes, 2, 2, 6);
    expect(rejection(() => codec.open(bytes.toString('base64url'), BINDING))).toBe('bad_integrity');
  });
});

describe('confidentiality', () => {
  const SECRET = 'sk-live-SECRET-1234';
  const body = { ...BODY, apiKey: SECRET };

  it.each([256, Number.POSITIVE_INFINITY])(
    'sealed: a secret in the body is not in the token nor its bytes (threshold %s)',
    (threshold) => {
      const { codec } = makeCodec({ mode: 'sealed', compressThresholdBytes: threshold });
      const { token } = codec.mint(BINDING, { ...CLAIMS, body });
      expect(token).not.toContain(SECRET);
      const bytes = decoded(token);
      expect(bytes.toString('latin1')).not.toContain(SECRET);
      expect(bytes.includes(Buffer.from(SECRET))).toBe(false);
      expect(codec.open(token, BINDING).body).toEqual(body);
    },
  );

  it('signed: the body is readable by whoever holds the token (integrity only)', () => {
    const { codec } = makeCodec({ mode: 'signed', compressThresholdBytes: Number.POSITIVE_INFINITY });
    const { token } = codec.mint(BINDING, { ...CLAIMS, body });
    expect(decoded(token).toString('utf8')).toContain(SECRET);
  });
});

describe('blobs', () => {
  const { codec } = makeCodec();

  it('round-trips and opens with any key of the ring', () => {
    const sealed = codec.sealBlob('{"content":[{"type":"text","text":"booked"}]}', 'outcome');
    expect(codec.openBlob(sealed, 'outcome')).toBe('{"content":[{"type":"text","text":"booked"}]}');
    const { codec: rotated } = makeCodec({ keys: [KEY_B, KEY_A] });
    expect(rotated.openBlob(sealed, 'outcome')).toContain('booked');
    expect(codec.openBlob(codec.sealBlob('', 'outcome'), 'outcome')).toBe('');
    expect(codec.sealBlob('same', 'outcome')).not.toBe(codec.sealBlob('same', 'outcome'));
  });

  it('rejects the wrong purpose, tampering and tokens as bad_integrity, and names an unknown key', () => {
    const sealed = codec.sealBlob('secret outcome', 'outcome');
    expect(decoded(sealed).toString('latin1')).not.toContain('secret outcome');
    expect(rejection(() => codec.openBlob(sealed, 'other'))).toBe('bad_integrity');
    const tampered = decoded(sealed);
    tampered[tampered.length - 1]! ^= 1;
    expect(rejection(() => codec.openBlob(tampered.toString('base64url'), 'outcome'))).toBe('bad_integrity');
    expect(rejection(() => makeCodec({ keys: [KEY_B] }).codec.openBlob(sealed, 'outcome'))).toBe('unknown_key');
    try {
      makeCodec({ keys: [KEY_B] }).codec.openBlob(sealed, 'outcome');
    } catch (error) {
      // A blob carries the whole 8-byte key id: exactly the ring key's id.
      expect((error as InvalidRequestStateError).keyId).toBe(codec.currentKeyId);
    }
    expect(rejection(() => codec.openBlob(codec.mint(BINDING, CLAIMS).token, 'outcome'))).toBe('bad_integrity');
    expect(rejection(() => codec.openBlob('not a blob!', 'outcome'))).toBe('bad_integrity');
    expect(rejection(() => codec.open(sealed, BINDING))).toBe('malformed');
  });
});

describe('digest', () => {
  const { codec } = makeCodec();

  it('is canonical, purpose-bound and keyed', () => {
    const d = codec.digest({ a: 1, b: [1, { c: 2, d: 3 }] }, 'responses');
    expect(d).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(codec.digest({ b: [1, { d: 3, c: 2 }], a: 1 }, 'responses')).toBe(d);
    expect(codec.digest({ a: 1, b: [1, { c: 2, d: 3 }] }, 'other')).not.toBe(d);
    expect(codec.digest({ a: 1, b: [1, { c: 2, d: 4 }] }, 'responses')).not.toBe(d);
    expect(makeCodec({ keys: [KEY_B] }).codec.digest({ a: 1, b: [1, { c: 2, d: 3 }] }, 'responses')).not.toBe(d);
    // Keyed with the minting key only: a rotated ring digests differently (documented).
    expect(makeCodec({ keys: [KEY_B, KEY_A] }).codec.digest({ a: 1 }, 'r')).not.toBe(codec.digest({ a: 1 }, 'r'));
  });

  it('cannot be confused by moving characters between purpose and value', () => {
    expect(codec.digest(12, 'x')).not.toBe(codec.digest(2, 'x1'));
  });
});

describe('construction and mint validation', () => {
  it('rejects invalid options', () => {
    expect(() => createRequestStateCodec({ keys: [KEY_A], ttlSeconds: 0 })).toThrow(TypeError);
    expect(() => createRequestStateCodec({ keys: [KEY_A], maxTokenBytes: Number.NaN })).toThrow(TypeError);
    expect(() => createRequestStateCodec({ keys: [KEY_A], clockSkewSeconds: -1 })).toThrow(TypeError);
    expect(() => createRequestStateCodec({ keys: [KEY_A], mode: 'plain' as 'sealed' })).toThrow(TypeError);
    expect(() => createRequestStateCodec({ keys: [] })).toThrow(/at least one key/);
  });

  it('rejects claims it could not open again', () => {
    const { codec } = makeCodec();
    expect(() => codec.mint(BINDING, { ...CLAIMS, round: -1 })).toThrow(TypeError);
    expect(() => codec.mint(BINDING, { ...CLAIMS, round: 1.5 })).toThrow(TypeError);
    expect(() => codec.mint(BINDING, { ...CLAIMS, round: 2 ** 32 })).toThrow(TypeError);
    expect(() => codec.mint(BINDING, { ...CLAIMS, fid: 'short' })).toThrow(/fid must be 16 bytes/);
    expect(() => codec.mint(BINDING, { ...CLAIMS, hash: `${CLAIMS.hash}=` })).toThrow(/hash must be 16 bytes/);
    expect(() => codec.mint(BINDING, { ...CLAIMS, body: { x: Number.POSITIVE_INFINITY } })).toThrow(TypeError);
    expect(() => codec.mint(BINDING, { ...CLAIMS, body: { ok: null, x: [Number.NaN] } })).toThrow(/non-finite/);
    expect(() => codec.mint(BINDING, { ...CLAIMS, body: () => 1 })).toThrow(/not a JSON value/);
    expect(() => codec.mint(BINDING, CLAIMS, { ttlSeconds: -5 })).toThrow(TypeError);
  });

  it('does not print key material', () => {
    const ring = createKeyRing([KEY_A]);
    const { codec } = makeCodec({ keys: ring });
    const hexA = decoded(KEY_A).toString('hex');
    for (const shown of [inspect(ring, { depth: 10, showHidden: true }), JSON.stringify(ring), inspect(codec)]) {
      expect(shown).not.toContain(KEY_A);
      expect(shown).not.toContain(hexA);
      expect(shown).not.toContain(hexA.slice(0, 8));
    }
  });
});

describe('wire format stability', () => {
  // Minted once (version 2) with GOLDEN_KEY at T0 from BINDING and CLAIMS. If these stop opening, a deploy
  // would break every state in flight: bump the format version instead of changing version 2.
  const GOLDEN = {
    sealed:
      'AgEAAoWICY9RVYR7iP9yTMJxVAAJWf8stxvCte07RyEODZLQEOn3PVlNfu0MYABMd_v7EV2Hrqe0dZSfmIUYTZUCjUs6RFml_1erLFSTiW183dyk1StWMBwqkmztwIqR5xmJNk7Xw9yWgfDVDQ_D57rIa4bHQc91-jHhmMjXB41pSUmDWTAkshVD1JRz4eJZVjb9CHp9vTClIMrK8ZD9ShgZhCgyj877y8T3TpeiNPF7Ffy-mKMAhvwRKEO6OCH3_oB9WZNwQxdIbYZWBY9twExW13JwJKoqcUwRL6IYQK4NPiC42ZVvgrzU9kw8YOK4DXxKWrxI6NSytygWuYBUQNJ8c1tCaDMInrtuWzj-JEQlrqoGfYwOnMlJ8-YuAFIHSTFlhEn5mfYcEo3PLYph7rgCR755rF2JklrVRpsuXrJm7dfaHY-qldt-xShSQV9io8W9XiU9rZsxwSIT_SccZhAMob6244ckM1PJGlrMQNJWxgAW4dP0bf6qapZHqzCC647grYzgv_kEoq4-BUDE7FB-R47nkrX8Pam4pFF68f1D56GOA_D88eqm-NOauVLg7YGDnnPV',
    signed:
      'AgIBAoWICY9RVYQkkHXDGdax_Ji7Vrg9kD1KBEEQhVcTr9G8uFdm9k9tDPxbxUhwUUQRaWZq3cbZ7t3uGn8YJzPxBBsJ5kaeQLyGGIk3EHOZUUyKoqjHe9-bm7F4b8zNeHWw1mg05p-eP9_S7ss2fd_eh7vxl7QfC49H_ZWd47Oj7PnhtcClznKCgr7Sho09H5BmSCTOMl0zVIGhd2MobG7tQIIdFAbbe5BINVfCVtTqNaN2M-5AYqg9QcWtdmexK5Hk3pNNbqDQP9iHxDR3TLspFKZny0k8bNGKRimRjEyWerJQRSnBZkw-QJ0UMNXvyGVp_3piPAVIaIaKl7pRFEW9akTlqYS24arWFFXyofHjatUJG2cruCShyT-WrbHcBRT7nMqylBiZwM7fHP6WUYWwrqarvEUgzUHEnXWhbSrizobILZtM8IjERIdA9py8-DMO9bkuovwBjvpjR8F_S0JGPFLoGicfBQ',
  };
  // Minted once (version 3, the current format) with GOLDEN_KEY at T0 from BINDING and CLAIMS. They guard
  // the whole format, its static dictionary included: if they stop opening, bump the version instead.
  const GOLDEN_V3 = {
    sealed:
      'AwEChYgJEblepXP_thnnAAS_AkbqGVHjGDnGKyqIaBmpR8XXoVUVQyFqQT8FAbs6ZHVjHg2_6U8mrSbosqVZ9HNC6hyknKzPh0DTw1QOQdK0_bVxMv9tf-tbZpCQpi8EfiriMKSXMWQ42a4zSjKY27D0P-1Fq3C6SqqGXSQ6cUkrtH1jHKmd11MMvPtORa1dN_U9x5PiZcpBdybp7tG04K5BeAO7eEp29Zmp8xo9osGYA1VfG9_pK6yAxZhRrX54wwAxF95qaAjEtDyONDO-6PAuOMXqJ5OQH_Lj7Vx67gC4XhAPtjNgVfdR5G0PM5tDk3k7FIrJC5yjJjFeOxqVm-_wUl3E6gl3BZ0AG4K9FaKGZZr4MlHkQfvQ8i6qnCqNuAfDT09Y-Ne6HkZ5LvOVHuaGZp_ePdhW',
    signed:
      'AxIChYgJIKWkZb5h_RE752mwh_PLkGOcXqJwh2GCDNPqjU9upZjud0v9WtNZ3JL7WSfvEfuCCFdL96j4iJyNcw8-by1LzClN7UksT8wsycxLD05NLGlPzs8rSa0oeWZu0VSSb2Nq1pKWWJTK7DDZiwEEOpJLi4pS85Irm11Dg9oLS_NLUj1TugrjLZIN04xSLRM7kjMyc1KKUvMetJVk5qYWFR981JSZ0p2Rn5PiWlGQWZRa3JRYwnKgfcXC70btiXnF5alFxQ9BdqZlFuU-UlBUediUn83Uk5FZXJJfVBkGct6Dlrz8ktQ9ICMUilMTS4oVDE0cFRLzUhQMTZwUSvNKMnMUSjJSFQoSi4tT89JTixSgxhWDhUHOBwBoG2HA60Bf8OwrT7TCPOl1',
  };
  // Version 1 (stored principal and binding digests) was never released; it is refused as such.
  const VERSION_1 = {
    sealed:
      'AQEBAoWICY9RVYRFdMDOWTTCgw-98a5aZo0BhqTTYYbZcWd3xNLNgkfkstLGvk8iIfq9Ql222wNJFN4ZlSZ5U8mha9_yJWnT6UP_2TQHIXhJv4NOfMSWOtIHyr6E18X3Ox_q_IPbJrvf33ShbJbuUm2E7xycuiMqFmfKkxmqO57wJWLCLWesyMum3ggXrjA41J4lTXOAsrulHBnuwW6M_es53jq1y7urRS2L4RHnZKHZcZiTz1qNezA555VqP4LhSai7J1gvVD8B_ZTU3xwQS2BZPmBFHmvOjHsIOvSTyawqNvCQYeVs0aioX6yy7SUr4qfUs8hX9jTIO9SVpYqabZoXn7teBNC9MghLiU2PNHS0UJqwdlkTOatLHELevlmO0owkPuNgDe_B7SZCddWYfcyzleRY4DEz43Wb4azfEvmFlmzqoZsz3DeL4YbOghl13SQAcMJgikUYtdlYSaK4wtv_494h6rp8ga3LH6CIq-9vwB_Qhygu3RChIqhBAQYsEEFlh6D0de6WMZQXFHY8oJ51d6aKiGQvfIiVIC9FbyRI7x0bS9gjILa2iCJ4a2Tjl1IT026-NK8mJRjaHL8S11Wk5Vu2S0eNWZA',
    signed:
      'AQIBAoWICY9RVYQ9Uttu4jAU_JVons0qCYGA39ouS6i6F6C7oFZV5SZOYgg2tR0IoPz7yoHdF-voXDxzZs4FH6B4PMTPs6eZ1dni-7xZrX-kK9brz9Ty3oiFbrajUxg_rYpJkxxBkIFewKQ5cm1cmCqZC73rsqkVSoKCpSnfWxBXtFxaV1RbUKtr3rYtQVqKKtNcgl7aW1fTdaW11lymJ1BMfi8cHLMcFKEfDnt-vxdEIMiZ5qBB2I--DAhyrXagePg6BcFnrSyfZaD4fB-lQR7yMQOBVaBYfvuJlqAUxip9-sOqml_xpeowSlVlnuHMGi-I7jwmMy-I7r1aWlF5tuTenhnDZcG1d1vadOmODoEVu06S1wuYBQ3ige_7_tA9PoHIbgiTZi80N2jfCA5XDmBHJqyQxZIz6yjyf-PB6Daeu43iZBvu5sHBf6nG69NjGi3syFlSgsKULBwMe_18zIIUBOI_A__2xQYU8SYZHtn4fHyYJ_GZyWQbFWUBAufah1Lb97wSRems24Nimujzr2x8LqdFPRmKl3XVN5s7JzPoK5xUV4-7A3gj0KBh-xcVktUGVbSZzfc9ArKZ1L5Zw_FiVUvt0MDWeZ6q5nQ8Aw',
  };

  it('derives the same key id from the same master key', () => {
    expect(legacyRing(GOLDEN_KEY).current.kid).toBe('AoWICY9RVYQ');
  });

  it.each(MODES)('opens a golden %s token minted by format version 2', (mode) => {
    const { codec } = makeCodec({ mode, keys: legacyRing(GOLDEN_KEY) });
    expect(codec.open(GOLDEN[mode], BINDING)).toMatchObject({ ...CLAIMS, v: 2, kid: 'AoWICY9RVYQ', iat: T0 });
    expect(rejection(() => codec.open(GOLDEN[mode], { ...BINDING, target: 'other' }))).toBe('bad_integrity');
  });

  it.each(MODES)('opens a golden %s token minted by format version 3', (mode) => {
    const { codec } = makeCodec({ mode, keys: legacyRing(GOLDEN_KEY) });
    const opened = codec.open(GOLDEN_V3[mode], BINDING);
    expect(opened).toEqual({ ...CLAIMS, v: 3, kid: 'AoWICY9RVYQ', iat: T0, exp: T0 + 1_800_000, jti: opened.jti });
    expect(opened.jti).toHaveLength(22);
    expect(rejection(() => codec.open(GOLDEN_V3[mode], { ...BINDING, target: 'other' }))).toBe('bad_integrity');
  });

  it.each(MODES)('mints version 3 smaller than version 2 for the same claims', (mode) => {
    const { codec } = makeCodec({ mode, keys: legacyRing(GOLDEN_KEY) });
    expect(codec.mint(BINDING, CLAIMS).token.length).toBeLessThan(GOLDEN[mode].length);
  });

  it.each(MODES)('refuses a %s token of format version 1 as unsupported_version', (mode) => {
    const { codec } = makeCodec({ mode, keys: legacyRing(GOLDEN_KEY) });
    expect(rejection(() => codec.open(VERSION_1[mode], BINDING))).toBe('unsupported_version');
  });
});
