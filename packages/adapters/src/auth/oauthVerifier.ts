/**
 * Access tokens from an organization's identity provider, for `baton serve
 * --oauth-issuer`: the verifier that makes the server an OAuth 2.1 resource
 * server. At creation it discovers the issuer (RFC 8414 authorization server
 * metadata, then OpenID Connect discovery, through the SDK client's
 * `discoverAuthorizationServerMetadata`, which also checks that the metadata
 * names the issuer exactly; `introspection_endpoint`, which the SDK drops from
 * an OpenID Connect document, is read from the document as served) and its
 * `jwks_uri`. A JWT access token is verified
 * with jose (`createRemoteJWKSet`, which caches the keys and refetches them
 * when an unknown `kid` appears, at most once per cooldown, so rotation at the
 * provider needs nothing here; `jwtVerify`): `iss` exactly, `aud` containing
 * this server's resource URL exactly as configured (RFC 8707), `exp` and `nbf` with
 * {@link DEFAULT_CLOCK_TOLERANCE_SECONDS} of tolerance, an algorithm from
 * {@link ALLOWED_ALGORITHMS} (asymmetric only: never `none`, never an HMAC
 * key made of the public key), and at most {@link MAX_ACCESS_TOKEN_CHARS}
 * characters. Any other token goes to introspection when credentials are
 * given (`introspection.ts`), else it is refused. A refused token is an
 * `invalid_token` (401); a JWKS or introspection endpoint that cannot be
 * reached is {@link IssuerUnavailableError} (503 with `Retry-After`, see
 * `http/serve.ts`). `onReject` hears why, in words that never quote the token.
 */
import { discoverAuthorizationServerMetadata } from '@modelcontextprotocol/client';
import { type AuthInfo, OAuthError, OAuthErrorCode, type OAuthTokenVerifier } from '@modelcontextprotocol/server';
import { createRemoteJWKSet, errors, type JWTPayload, jwtVerify } from 'jose';
import type { ServerMetadata } from 'openid-client';
import {
  createIntrospector,
  type IntrospectionCredentials,
  type Introspector,
  IssuerUnavailableError,
} from './introspection.js';
import { authInfoOf, type ClaimMapping } from './oauthClaims.js';

/** Clock skew tolerated on `exp` and `nbf`, in seconds. */
export const DEFAULT_CLOCK_TOLERANCE_SECONDS = 30;
/** Longest access token accepted, in characters (a JWT with many groups fits; Node refuses headers over 16 KiB anyway). */
export const MAX_ACCESS_TOKEN_CHARS = 12 * 1024;
/** The JWS algorithms accepted: RSA, RSA-PSS, ECDSA and EdDSA, never `none` or HMAC. */
export const ALLOWED_ALGORITHMS: readonly string[] = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
];

/** Options of {@link createOAuthVerifier}. */
export interface OAuthVerifierOptions extends Omit<ClaimMapping, 'issuer'> {
  /** The issuer identifier, e.g. `https://idp.example.com/realms/acme`; https unless loopback. */
  readonly issuer: string;
  /**
   * This server's resource URL, which `aud` must contain (usually the `/mcp` URL). A string is
   * compared exactly as given (`https://api.example` is not `https://api.example/`); a `URL`
   * as its `href`.
   */
  readonly audience: string | URL;
  /** Client credentials for introspecting opaque tokens (RFC 7662); without them only JWTs are accepted. */
  readonly introspection?: IntrospectionCredentials;
  /** Clock skew tolerated on `exp`/`nbf` (default {@link DEFAULT_CLOCK_TOLERANCE_SECONDS}). */
  readonly clockToleranceSeconds?: number;
  /** Least time between two JWKS refetches caused by an unknown `kid`, ms (jose's default 30000). */
  readonly jwksCooldownMs?: number;
  /** Longest time the JWKS is used before it is fetched again, ms (jose's default 600000). */
  readonly jwksCacheMaxAgeMs?: number;
  /** Why a token was refused or could not be checked (never the token). */
  readonly onReject?: (reason: string) => void;
  /** The issuer's metadata when already discovered ({@link discoverOAuthIssuer}); else it is discovered. */
  readonly metadata?: IssuerMetadata;
}

/** A verifier for the issuer's tokens, with what was discovered. */
export interface OAuthVerifier extends OAuthTokenVerifier {
  /** The issuer's metadata (RFC 8414 or OpenID Connect discovery). */
  readonly metadata: { readonly issuer: string; readonly jwks_uri?: string; readonly [claim: string]: unknown };
  /** The resource URL tokens must be for. */
  readonly resource: URL;
  /** The audience `aud` must contain, exactly as configured (the resource, unnormalised). */
  readonly audience: string;
}

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** A loopback host, where an http: issuer is accepted (tests, local providers). */
const isLoopback = (url: URL) => ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);

/** The issuer URL, checked: http(s), https unless loopback, no query or fragment. */
function issuerUrl(issuer: string): URL {
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw new Error(`the OAuth issuer must be a URL, got "${issuer}"`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url))) {
    throw new Error(`the OAuth issuer must be an https: URL (http: only on loopback), got "${issuer}"`);
  }
  if (url.search || url.hash) throw new Error(`the OAuth issuer must have no query or fragment, got "${issuer}"`);
  return url;
}

/** Why jose refused a token, in words (never the token). */
function joseReason(error: unknown): string {
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'iss') return 'the token is from another issuer';
    if (error.claim === 'aud') return 'the token is for another audience';
    if (error.claim === 'nbf') return 'the token is not valid yet';
    return `the token's "${error.claim}" claim is wrong (${error.reason})`;
  }
  if (error instanceof errors.JWTExpired) return 'the token has expired';
  if (error instanceof errors.JOSEAlgNotAllowed) return 'the token is signed with an algorithm that is not allowed';
  if (error instanceof errors.JWKSNoMatchingKey) return "the token's signing key (kid) is not in the issuer's JWKS";
  if (error instanceof errors.JWKSMultipleMatchingKeys) return 'the token names no single key of the JWKS';
  if (error instanceof errors.JWSSignatureVerificationFailed) return "the token's signature does not verify";
  if (error instanceof errors.JOSENotSupported) return 'the token uses an unsupported algorithm or key';
  if (error instanceof errors.JWTInvalid || error instanceof errors.JWSInvalid) return 'the token is malformed';
  return 'the token cannot be verified';
}

/** Errors of the key lookup that are the token's fault; anything else means the JWKS could not be fetched. */
const tokenFault = (error: unknown) =>
  error instanceof errors.JWKSNoMatchingKey ||
  error instanceof errors.JWKSMultipleMatchingKeys ||
  error instanceof errors.JOSENotSupported;

/** An issuer's discovered metadata (RFC 8414 / OpenID Connect). */
export type IssuerMetadata = OAuthVerifier['metadata'];

/**
 * Discover an issuer: RFC 8414 authorization server metadata, else OpenID Connect discovery.
 * @throws Error with one line when the issuer is not an acceptable URL (https unless loopback, no
 *   query or fragment), cannot be reached, publishes no metadata, or its metadata names another issuer.
 */
export async function discoverOAuthIssuer(issuer: string): Promise<IssuerMetadata> {
  issuerUrl(issuer);
  // The SDK parses an OpenID Connect document with a schema that drops the fields OpenID
  // Connect Discovery does not define, `introspection_endpoint` among them (Keycloak before
  // 26.4 serves only that document): the document as served is kept to read them from.
  let served: Record<string, unknown> | undefined;
  const keepingDocument: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    if (response.ok) {
      served = (await response
        .clone()
        .json()
        .catch(() => undefined)) as Record<string, unknown> | undefined;
    }
    return response;
  };
  let metadata: Awaited<ReturnType<typeof discoverAuthorizationServerMetadata>>;
  try {
    metadata = await discoverAuthorizationServerMetadata(issuer, { fetchFn: keepingDocument });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    throw new Error(`cannot discover the OAuth issuer ${issuer}: ${cause ?? (error as Error).message}`);
  }
  if (!metadata) {
    throw new Error(
      `the OAuth issuer ${issuer} publishes no metadata (neither /.well-known/oauth-authorization-server nor /.well-known/openid-configuration)`,
    );
  }
  const introspection = served?.introspection_endpoint;
  if (!('introspection_endpoint' in metadata) && introspection !== undefined) {
    return { ...metadata, introspection_endpoint: endpointUrl(issuer, 'introspection_endpoint', introspection) };
  }
  return metadata as IssuerMetadata;
}

/** An endpoint the issuer's document names: an https: URL (http: only on loopback). */
function endpointUrl(issuer: string, field: string, value: unknown): string {
  let url: URL | undefined;
  try {
    url = typeof value === 'string' ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || !(url.protocol === 'https:' || (url.protocol === 'http:' && isLoopback(url)))) {
    throw new Error(`the OAuth issuer ${issuer} names an unusable ${field} (an https: URL is needed)`);
  }
  return url.href;
}

/**
 * Discover the issuer (unless `metadata` is given) and create its verifier.
 *
 * A verified token yields `AuthInfo` with `extra.principal` = `<iss>#<sub>` (see `oauthClaims.ts`),
 * `extra.roles`, `extra.displayName` (display only), `scopes`, `expiresAt` and `resource`.
 * @throws Error with one line when the issuer is not an acceptable URL, cannot be reached, has no
 *   metadata, names another issuer, or has no `jwks_uri` (and no introspection is configured).
 *
 * @example
 * ```ts
 * import { createFlowServerFactory, createOAuthVerifier, serveHttp } from '@baton/adapters';
 *
 * const verifier = await createOAuthVerifier({
 *   issuer: 'https://idp.example.com/realms/acme',
 *   audience: 'https://baton.example.com/mcp',
 *   rolesClaim: 'realm_access.roles',
 * });
 * await serveHttp({
 *   factory: createFlowServerFactory({ runner, requireScopes: true }),
 *   host: '0.0.0.0',
 *   port: 8080,
 *   verifier,
 *   oauth: { authorizationServer: verifier.metadata, resource: verifier.resource },
 * });
 * ```
 */
export async function createOAuthVerifier(options: OAuthVerifierOptions): Promise<OAuthVerifier> {
  const metadata = options.metadata ?? (await discoverOAuthIssuer(options.issuer));
  const sameBut = (a: string, b: string) => a === b || a === `${b}/` || `${a}/` === b;
  if (!sameBut(metadata.issuer, options.issuer)) {
    throw new Error(`the issuer's metadata names issuer ${metadata.issuer}, not ${options.issuer}`);
  }
  // `iss` must equal the issuer as its metadata spells it (a trailing slash given or left out).
  const issuer = metadata.issuer;
  // Compared as given: URL parsing would add a trailing slash to a bare origin.
  const audience = typeof options.audience === 'string' ? options.audience : options.audience.href;
  const resource = new URL(audience);
  const mapping: ClaimMapping = { ...options, issuer };
  const introspect: Introspector | undefined = options.introspection
    ? metadata.introspection_endpoint
      ? createIntrospector(metadata as ServerMetadata, options.introspection, mapping, resource, audience)
      : undefined
    : undefined;
  if (options.introspection && !introspect) {
    throw new Error(`the OAuth issuer ${issuer} has no introspection_endpoint, so opaque tokens cannot be checked`);
  }
  const jwksUri = metadata.jwks_uri;
  if (!jwksUri && !introspect) throw new Error(`the OAuth issuer ${issuer} publishes no jwks_uri`);
  const remote = jwksUri
    ? createRemoteJWKSet(new URL(jwksUri), {
        ...(options.jwksCooldownMs !== undefined ? { cooldownDuration: options.jwksCooldownMs } : {}),
        ...(options.jwksCacheMaxAgeMs !== undefined ? { cacheMaxAge: options.jwksCacheMaxAgeMs } : {}),
      })
    : undefined;
  const tolerance = options.clockToleranceSeconds ?? DEFAULT_CLOCK_TOLERANCE_SECONDS;
  const reject = (reason: string): never => {
    options.onReject?.(`refused a bearer token: ${reason}`);
    throw new OAuthError(OAuthErrorCode.InvalidToken, reason);
  };
  const unavailable = (error: IssuerUnavailableError): never => {
    options.onReject?.(`cannot check a bearer token: ${error.message}`);
    throw error;
  };

  async function verifyJwt(token: string): Promise<AuthInfo> {
    if (!remote) return reject('the token is a JWT but the issuer publishes no JWKS');
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(
        token,
        async (header, input) => {
          try {
            return await remote(header, input);
          } catch (error) {
            if (tokenFault(error)) throw error;
            throw new IssuerUnavailableError(`the issuer's JWKS cannot be fetched (${(error as Error).message})`);
          }
        },
        {
          issuer,
          audience,
          algorithms: [...ALLOWED_ALGORITHMS],
          clockTolerance: tolerance,
          requiredClaims: ['exp'],
        },
      ));
    } catch (error) {
      if (error instanceof IssuerUnavailableError) return unavailable(error);
      return reject(joseReason(error));
    }
    const info = authInfoOf(token, payload, mapping, resource);
    if (typeof info === 'string') return reject(info);
    // The SDK's gate refuses `expiresAt` in the past; the tolerance applies to it too.
    return { ...info, expiresAt: info.expiresAt! + tolerance };
  }

  return {
    metadata,
    resource,
    audience,
    async verifyAccessToken(token: string): Promise<AuthInfo> {
      if (token.length > MAX_ACCESS_TOKEN_CHARS) {
        return reject(`the token is longer than ${MAX_ACCESS_TOKEN_CHARS} characters`);
      }
      if (JWT_SHAPE.test(token)) return verifyJwt(token);
      if (!introspect) return reject('the token is not a JWT and no introspection is configured');
      let info: AuthInfo | string;
      try {
        info = await introspect(token);
      } catch (error) {
        if (error instanceof IssuerUnavailableError) return unavailable(error);
        throw error;
      }
      return typeof info === 'string' ? reject(info) : info;
    },
  };
}
