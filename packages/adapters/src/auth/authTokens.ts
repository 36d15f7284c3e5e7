/**
 * Static bearer tokens for `baton serve --auth-tokens FILE`: a JSON object
 * mapping each token to the principal id it authenticates, or to
 * `{ "principal": "bob", "roles": ["manager"] }` (the roles say who may make
 * which decisions; they reach the call context as `authInfo.extra.roles`). Tokens are kept
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
 * What a token stands for: a principal id, or a principal with roles and scopes (`scopes`: e.g.
 * `["baton:events"]`, which `POST /events/<name>` requires of a bearer).
 */
export type TokenEntry =
  | string
  | {
      readonly principal: string;
      readonly roles?: readonly string[];
      readonly scopes?: readonly string[];
      /** A display name (e.g. `"Bob Builder"`), kept in the audit of a decision when names are stored. */
      readonly name?: string;
    };

const isNames = (list: unknown): list is string[] =>
  Array.isArray(list) && list.every((item) => typeof item === 'string' && item.length > 0);

/** A token table entry, normalised; `undefined` when malformed. */
function normalise(entry: unknown): Normalised | undefined {
  if (typeof entry === 'string') return entry.length > 0 ? { principal: entry, roles: [], scopes: [] } : undefined;
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return undefined;
  const { principal, roles, scopes, name, ...rest } = entry as {
    principal?: unknown;
    roles?: unknown;
    scopes?: unknown;
    name?: unknown;
  };
  if (Object.keys(rest).length > 0 || typeof principal !== 'string' || principal.length === 0) return undefined;
  if ((roles !== undefined && !isNames(roles)) || (scopes !== undefined && !isNames(scopes))) return undefined;
  if (name !== undefined && (typeof name !== 'string' || name.length === 0 || name.length > 200)) return undefined;
  return {
    principal,
    roles: [...new Set(roles ?? [])],
    scopes: [...new Set(scopes ?? [])],
    ...(name === undefined ? {} : { name }),
  };
}

/** A token table entry as the verifier keeps it. */
interface Normalised {
  principal: string;
  roles: string[];
  scopes: string[];
  name?: string;
}

/** The principal an entry names, for messages (never the token). */
function named(entry: unknown): string {
  const principal = typeof entry === 'string' ? entry : (entry as { principal?: unknown } | null)?.principal;
  return typeof principal === 'string' && principal.length > 0 ? `principal ${JSON.stringify(principal)}` : 'an entry';
}

/**
 * A verifier for a fixed token table.
 *
 * A verified token yields `{ token, clientId: principal, scopes, expiresAt, extra: { principal, roles, displayName? } }`
 * (`scopes`: the entry's, default none).
 * @throws Error when the table is empty, holds a malformed entry (a principal must be a non-empty
 *   string, roles an array of non-empty strings) or a token shorter than {@link MIN_TOKEN_CHARS}
 *   characters (the message names the principal, never the token).
 */
export function createStaticTokenVerifier(tokens: Readonly<Record<string, TokenEntry>>): OAuthTokenVerifier {
  const entries = Object.entries(tokens).map(([token, value]) => {
    const entry = normalise(value);
    if (token.length === 0 || !entry) {
      throw new Error(
        `auth tokens: ${named(value)} is malformed: a token maps to a non-empty principal id, or to { "principal": "bob", "roles": ["manager"] }`,
      );
    }
    if (tooShort(token)) {
      throw new Error(
        `auth tokens: the token of principal ${JSON.stringify(entry.principal)} is shorter than ${MIN_TOKEN_CHARS} characters`,
      );
    }
    return { digest: digest(token), ...entry };
  });
  if (entries.length === 0) throw new Error('auth tokens: the table holds no token');
  return {
    async verifyAccessToken(token: string): Promise<AuthInfo> {
      const presented = digest(token);
      let found: Normalised | undefined;
      for (const entry of entries) {
        if (timingSafeEqual(entry.digest, presented) && found === undefined) found = entry;
      }
      if (found === undefined) throw new OAuthError(OAuthErrorCode.InvalidToken, 'Unknown bearer token');
      return {
        token,
        clientId: found.principal,
        scopes: [...found.scopes],
        expiresAt: Math.floor(Date.now() / 1000) + VERIFIED_FOR_SECONDS,
        extra: {
          principal: found.principal,
          roles: [...found.roles],
          ...(found.name === undefined ? {} : { displayName: found.name }),
        },
      };
    },
  };
}

/**
 * Read an auth-tokens file: a JSON object `{ "<token>": "<principal id>" | { "principal": "<id>", "roles": ["<role>", ...] }, ... }`.
 * @throws Error with a one-line message when the file is unreadable or malformed, or a token is
 *   shorter than {@link MIN_TOKEN_CHARS} characters (naming the file and the principal, never the token).
 */
export async function loadAuthTokens(path: string): Promise<Record<string, TokenEntry>> {
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
  for (const [token, value] of entries) {
    const entry = normalise(value);
    if (token.length === 0 || !entry) {
      throw new Error(
        `auth tokens file ${path}: ${named(value)} is malformed: map each token to a non-empty principal id, or to { "principal": "bob", "roles": ["manager"] } (roles: non-empty strings)`,
      );
    }
    if (tooShort(token)) {
      throw new Error(
        `auth tokens file ${path}: the token of principal ${JSON.stringify(entry.principal)} is shorter than ${MIN_TOKEN_CHARS} characters; use long random tokens (e.g. from "baton keygen")`,
      );
    }
  }
  return parsed as Record<string, TokenEntry>;
}
