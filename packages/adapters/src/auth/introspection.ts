/**
 * Opaque access tokens, checked by token introspection (RFC 7662) at the
 * issuer's `introspection_endpoint` with this server's own client
 * credentials, through openid-client. An active answer must name the issuer
 * (when it names one), this resource in `aud` (exactly as configured), and an expiry. Answers are
 * cached by the token's SHA-256 digest (never the token itself) until the
 * token expires or {@link INTROSPECTION_CACHE_SECONDS} pass, whichever is
 * first (so a revoked token stops working within that time), in a cache of
 * at most {@link INTROSPECTION_CACHE_ENTRIES} entries (the oldest go first).
 * Inactive tokens are not cached. An answer without `sub` (a client-credentials token) names
 * its `client_id` as the account, as a JWT access token's `sub` would. An introspection endpoint that cannot be
 * reached is {@link IssuerUnavailableError} (503), not a 401.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { AuthInfo } from '@modelcontextprotocol/server';
import * as oidc from 'openid-client';
import { authInfoOf, type ClaimMapping } from './oauthClaims.js';

/** Longest time an introspection answer is reused, in seconds. */
export const INTROSPECTION_CACHE_SECONDS = 300;
/** Most introspection answers kept. */
export const INTROSPECTION_CACHE_ENTRIES = 1000;

/** The issuer (its JWKS or its introspection endpoint) could not be asked: answer 503, not 401. */
export class IssuerUnavailableError extends Error {
  override readonly name = 'IssuerUnavailableError';
}

/** Client credentials of this server at the issuer, for introspection. */
export interface IntrospectionCredentials {
  readonly clientId: string;
  readonly clientSecret: string;
}

/**
 * Read an introspection credentials file: `{ "client_id": "...", "client_secret": "..." }`.
 * @throws Error with one line naming the file (never the secret) when unreadable or malformed.
 */
export async function loadIntrospectionCredentials(path: string): Promise<IntrospectionCredentials> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new Error(`cannot read introspection credentials file ${path}: ${code ?? 'not valid JSON'}`);
  }
  const { client_id: clientId, client_secret: clientSecret } = (parsed ?? {}) as Record<string, unknown>;
  if (typeof clientId !== 'string' || clientId === '' || typeof clientSecret !== 'string' || clientSecret === '') {
    throw new Error(
      `introspection credentials file ${path} must hold { "client_id": "...", "client_secret": "..." } (non-empty strings)`,
    );
  }
  return { clientId, clientSecret };
}

/** Checks opaque tokens at the issuer: the `AuthInfo`, or a 401 reason string. */
export type Introspector = (token: string) => Promise<AuthInfo | string>;

/**
 * An introspector for the issuer's `introspection_endpoint` (from its discovered metadata). An
 * active answer's `aud` must contain `audience` exactly (default: `resource.href`).
 */
export function createIntrospector(
  metadata: oidc.ServerMetadata,
  credentials: IntrospectionCredentials,
  mapping: ClaimMapping,
  resource: URL,
  audience: string = resource.href,
): Introspector {
  const config = new oidc.Configuration(metadata, credentials.clientId, credentials.clientSecret);
  if (new URL(metadata.issuer).protocol === 'http:') oidc.allowInsecureRequests(config);
  const cache = new Map<string, { info: AuthInfo; until: number }>();

  return async (token) => {
    const key = createHash('sha256').update(token, 'utf8').digest('base64url');
    const now = Date.now() / 1000;
    const cached = cache.get(key);
    if (cached && cached.until > now) return { ...cached.info, token };
    cache.delete(key);
    let answer: oidc.IntrospectionResponse;
    try {
      answer = await oidc.tokenIntrospection(config, token);
    } catch (error) {
      throw new IssuerUnavailableError(`introspection failed: ${(error as Error).message}`);
    }
    if (!answer.active) return 'the issuer says the token is not active';
    if (answer.iss !== undefined && answer.iss !== mapping.issuer) return 'the token is from another issuer';
    const audiences = typeof answer.aud === 'string' ? [answer.aud] : (answer.aud ?? []);
    if (!audiences.includes(audience)) return 'the token is for another audience';
    // A client-credentials token introspects without `sub` (RFC 7662 makes it optional): the
    // client is the account, as `sub` says in a JWT access token (RFC 9068).
    const claims: Record<string, unknown> = { ...answer };
    if (
      (mapping.principalClaim ?? 'sub') === 'sub' &&
      claims.sub === undefined &&
      typeof claims.client_id === 'string'
    ) {
      claims.sub = claims.client_id;
    }
    const info = authInfoOf(token, claims, mapping, resource);
    if (typeof info === 'string') return info;
    if (cache.size >= INTROSPECTION_CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
    cache.set(key, { info, until: Math.min(info.expiresAt!, now + INTROSPECTION_CACHE_SECONDS) });
    return info;
  };
}
