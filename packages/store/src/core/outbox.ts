/**
 * What every ledger agrees about the notification outbox (schema 8): how long
 * a row is kept after it was written, delivered or not. A notification that
 * could not be delivered in that time is dropped with its row.
 */

/** How long an outbox row is kept after it was written (ms): 7 days. */
export const OUTBOX_RETENTION_MS = 7 * 24 * 3600 * 1000;
