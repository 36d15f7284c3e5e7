/**
 * Single-use token codes. A code is 128 random bits in base64url (22
 * characters), handed to the flow once; the ledger stores only its sha256, so
 * a copy of the database cannot be turned back into redeemable codes.
 */
import { createHash, randomBytes } from 'node:crypto';

/** Codes longer than this are never ours: they are answered `unknown` without hashing. */
export const MAX_TOKEN_CODE_LENGTH = 512;

/** A fresh random token code: 16 bytes from the CSPRNG, base64url without padding. */
export function generateTokenCode(): string {
  return randomBytes(16).toString('base64url');
}

/** The stored form of a code: sha256 of its UTF-8 bytes, base64url. */
export function hashTokenCode(code: string): string {
  return createHash('sha256').update(code, 'utf8').digest('base64url');
}
