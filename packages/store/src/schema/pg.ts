/**
 * The ledger's tables for PostgreSQL, as drizzle schema. Same logical tables
 * as `sqlite.ts`: `baton_redemptions`, `baton_tokens` and `baton_meta`. Times
 * are `bigint` milliseconds since the epoch (read back as JavaScript numbers),
 * taken from the engine's clock so that every instance agrees with the
 * envelope's own expiry. Tables are created unqualified, in the connection's
 * `search_path` (normally `public`). This file is read by drizzle-kit: it
 * imports nothing but drizzle-orm.
 */
import { bigint, index, pgTable, text } from 'drizzle-orm/pg-core';

/** Redeemed requestState ids: at most one row per jti, ever (until pruned after expiry). */
export const redemptions = pgTable(
  'baton_redemptions',
  {
    /** The envelope's random 128-bit id (base64url). */
    jti: text('jti').primaryKey(),
    /** Digest of the redeeming round's `inputResponses`; a retry must match it byte for byte. */
    responsesDigest: text('responses_digest').notNull(),
    /** The round's outcome, sealed by the engine; null until recorded (or if the round crashed). */
    outcome: text('outcome'),
    /** When the envelope expires (ms); the row may be pruned after it. */
    expiresAt: bigint('expires_at', { mode: 'number' }).notNull(),
    /** When the jti was redeemed (ms, engine clock). */
    redeemedAt: bigint('redeemed_at', { mode: 'number' }).notNull(),
  },
  (table) => [index('baton_redemptions_expires_at_idx').on(table.expiresAt)],
);

/** Single-use tokens minted by flows (approval links, access codes). */
export const tokens = pgTable(
  'baton_tokens',
  {
    /** sha256 of the code (base64url): the code itself is never stored. */
    codeHash: text('code_hash').primaryKey(),
    /** What the token is for; redemption must name the same purpose. */
    purpose: text('purpose').notNull(),
    /** Optional opaque data handed back on redemption. */
    data: text('data'),
    /** When the token stops being redeemable (ms). */
    expiresAt: bigint('expires_at', { mode: 'number' }).notNull(),
    /** When it was redeemed (ms), or null while unused. */
    usedAt: bigint('used_at', { mode: 'number' }),
    /** When it was minted (ms). */
    createdAt: bigint('created_at', { mode: 'number' }).notNull(),
  },
  (table) => [index('baton_tokens_expires_at_idx').on(table.expiresAt)],
);

/** Key/value facts about the ledger database itself (`schema_version`). */
export const meta = pgTable('baton_meta', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
});
