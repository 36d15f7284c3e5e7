/**
 * Static bearer tokens for `baton serve --auth-tokens FILE`: a JSON object
 * mapping each token to the principal id it authenticates. Tokens are kept
 * only as SHA-256 digests and compared in constant time (every digest is
 * compared, with `timingSafeEqual`, whatever matched), and the verifier plugs
 * into the SDK's bearer-auth gate, which answers a missing or unknown token
 * with HTTP 401 and a `WWW-Authenticate` challenge. A token must be at least
 * {@link MIN_TOKEN_CHARS} characters long: a short one can be guessed. No
 * error message ever quotes a token.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { type AuthInfo, OAuthError, OAuthErrorCode, type OAuthTokenVerifier } from '@modelcontextprotocol/server';

/** Fewest characters a bearer token may have (`baton keygen` prints 43 random ones). */
export const MIN_TOKEN_CHARS = 16;

const tooShort = (token: string) => [...token].length < MIN_TOKEN_CHARS;

/** How long a verified token's `AuthInfo` claims to be valid, in seconds (the SDK gate requires an expiry). */
const VERIFIED_FOR_SECONDS = 3600;

const digest = (token: string) => createHash('sha256').update(token, 'utf8').digest();

/**
 * A verifier for a fixed token table.
 *
 * A verified token yields `{ token, clientId: principal, scopes: [], expiresAt, extra: { principal } }`.
 * @throws Error when the table is empty, holds an empty principal or a token shorter than
 *   {@link MIN_TOKEN_CHARS} characters (the message names the principal, never the token).
 */
export function createStaticTokenVerifier(tokens: Readonly<Record<string, string>>): OAuthTokenVerifier {
  const entries = Object.entries(tokens).map(([token, principal]) => {
    if (token.length === 0 || typeof principal !== 'string' || principal.length === 0) {
      throw new Error('auth tokens: every token and principal must be a non-empty string');
    }
    if (tooShort(token)) {
      throw new Error(
        `auth tokens: the token of principal ${JSON.stringify(principal)} is shorter than ${MIN_TOKEN_CHARS} characters`,
      );
    }
    return { digest: digest(token), principal };
  });
  if (entries.length === 0) throw new Error('auth tokens: the table holds no token');
  return {
    async verifyAccessToken(token: string): Promise<AuthInfo> {
      const presented = digest(token);
      let principal: string | undefined;
      for (const entry of entries) {
        if (timingSafeEqual(entry.digest, presented) && principal === undefined) principal = entry.principal;
      }
      if (principal === undefined) throw new OAuthError(OAuthErrorCode.InvalidToken, 'Unknown bearer token');
      return {
        token,
        clientId: principal,
        scopes: [],
        expiresAt: Math.floor(Date.now() / 1000) + VERIFIED_FOR_SECONDS,
        extra: { principal },
      };
    },
  };
}

/**
 * Read an auth-tokens file: a JSON object `{ "<token>": "<principal id>", ... }`.
 * @throws Error with a one-line message when the file is unreadable or malformed, or a token is
 *   shorter than {@link MIN_TOKEN_CHARS} characters (naming the file and the principal, never the token).
 */
export async function loadAuthTokens(path: string): Promise<Record<string, string>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new Error(`cannot read auth tokens file ${path}: ${(error as NodeJS.ErrnoException).code ?? error}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`auth tokens file ${path} is not valid JSON`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error(`auth tokens file ${path} must hold a JSON object mapping each token to a principal id`);
  }
  const entries = Object.entries(parsed as Record<string, unknown>);
  if (entries.length === 0) throw new Error(`auth tokens file ${path} holds no token`);
  for (const [token, principal] of entries) {
    if (token.length === 0 || typeof principal !== 'string' || principal.length === 0) {
      throw new Error(`auth tokens file ${path}: every token must map to a non-empty principal id string`);
    }
    if (tooShort(token)) {
      throw new Error(
        `auth tokens file ${path}: the token of principal ${JSON.stringify(principal)} is shorter than ${MIN_TOKEN_CHARS} characters; use long random tokens (e.g. from "baton keygen")`,
      );
    }
  }
  return parsed as Record<string, string>;
}
