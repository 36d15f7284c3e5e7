/**
 * The ledger's tables for SQLite, as drizzle schema. Same logical tables as
 * `pg.ts`: `baton_redemptions` (one row per redeemed requestState jti, with the
 * digest of that round's responses and its sealed outcome), `baton_tokens`
 * (single-use tokens, keyed by the sha256 of the code, never the code itself)
 * and `baton_meta` (the schema version the store checks at start-up). Every
 * time is integer milliseconds since the epoch, taken from the engine's clock
 * rather than the database's. This file is read by drizzle-kit: it imports
 * nothing but drizzle-orm.
 */
import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/** Redeemed requestState ids: at most one row per jti, ever (until pruned after expiry). */
export const redemptions = sqliteTable(
  'baton_redemptions',
  {
    /** The envelope's random 128-bit id (base64url). */
    jti: text('jti').primaryKey(),
    /** Digest of the redeeming round's `inputResponses`; a retry must match it byte for byte. */
    responsesDigest: text('responses_digest').notNull(),
    /** The round's outcome, sealed by the engine; null until recorded (or if the round crashed). */
    outcome: text('outcome'),
    /** When the envelope expires (ms); the row may be pruned after it. */
    expiresAt: integer('expires_at').notNull(),
    /** When the jti was redeemed (ms, engine clock). */
    redeemedAt: integer('redeemed_at').notNull(),
  },
  (table) => [index('baton_redemptions_expires_at_idx').on(table.expiresAt)],
);

/** Single-use tokens minted by flows (approval links, access codes). */
export const tokens = sqliteTable(
  'baton_tokens',
  {
    /** sha256 of the code (base64url): the code itself is never stored. */
    codeHash: text('code_hash').primaryKey(),
    /** What the token is for; redemption must name the same purpose. */
    purpose: text('purpose').notNull(),
    /** Optional opaque data handed back on redemption. */
    data: text('data'),
    /** When the token stops being redeemable (ms). */
    expiresAt: integer('expires_at').notNull(),
    /** When it was redeemed (ms), or null while unused. */
    usedAt: integer('used_at'),
    /** When it was minted (ms). */
    createdAt: integer('created_at').notNull(),
  },
  (table) => [index('baton_tokens_expires_at_idx').on(table.expiresAt)],
);

/** Key/value facts about the ledger database itself (`schema_version`). */
export const meta = sqliteTable('baton_meta', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
});
