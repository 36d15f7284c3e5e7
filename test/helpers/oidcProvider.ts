/**
 * A real authorization server on loopback for tests: panva's oidc-provider
 * (OpenID certified) with resource indicators, client credentials, JWT access
 * tokens for any resource, introspection, and a `groups` claim taken from
 * each client's metadata (so two clients stand for two people with different
 * groups), people who sign in by authorization code (with their names and
 * groups in the UserInfo answer, scope `profile`), and web clients with exact
 * redirect URIs for the decision pages' sign-in. It sits behind a small HTTP front of its own so that tests can
 * rotate the signing keys while it runs (`rotateKeys()`: a new provider with
 * a new key first and the old one still published, same issuer and port) and
 * take the JWKS endpoint down (`jwksDown = true`: 503) to simulate an outage,
 * and serve only the OpenID Connect discovery document (`openIdOnly = true`:
 * the RFC 8414 one answers 404).
 */
import { createPrivateKey, generateKeyPairSync, type JsonWebKey, sign } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

/** A JSON Web Key with its id (a private one holds `d`). */
export type JWK = JsonWebKey & { kid?: string; alg?: string; use?: string };

/** A client of the test provider: one person or service, with its groups. */
export interface TestClient {
  readonly clientId: string;
  readonly clientSecret: string;
  /** Put into every access token issued to it as `groups`. */
  readonly groups?: readonly string[];
  /** Put into every access token as `name` (display only). */
  readonly name?: string;
  /** Scopes it may ask for (default: all three Baton scopes). */
  readonly scope?: string;
}

/** A person who signs in (authorization code), with the groups their tokens carry. */
export interface TestUser {
  readonly accountId: string;
  readonly groups?: readonly string[];
  readonly name?: string;
}

/**
 * A web application that signs people in (authorization code with PKCE, a client secret sent
 * with HTTP Basic, ID tokens in ES256): `baton serve --login-client-id` for the decision pages.
 */
export interface TestWebClient {
  readonly clientId: string;
  readonly clientSecret: string;
  /** Exact redirect URIs, e.g. `http://127.0.0.1:4321/auth/callback`. */
  readonly redirectUris: readonly string[];
}

/**
 * The public client a command-line tool signs in with: a native application, so any loopback
 * port is accepted for its redirect (RFC 8252), authorization code with PKCE, no secret.
 */
export const CLI_CLIENT_ID = 'baton-cli';

/** The running provider. */
export interface TestIdentityProvider {
  /** The issuer identifier, e.g. `http://127.0.0.1:43123`. */
  readonly issuer: string;
  /** The token endpoint. */
  readonly tokenEndpoint: string;
  /** The public keys currently published (as the JWKS serves them). */
  readonly publicKeys: () => JWK[];
  /** A client-credentials access token for `resource` (a JWT; opaque when its path ends in `/opaque`), with `scope` (default the client's). */
  token(client: TestClient, options: { resource: string; scope?: string }): Promise<string>;
  /**
   * A JWT signed (ES256) with the provider's current key, with exactly these claims: for tokens the
   * provider would never issue (another issuer, expired). `header` is merged into `{ alg, kid, typ }`.
   */
  sign(claims: Record<string, unknown>, header?: Record<string, unknown>): string;
  /** Rotate: a new signing key first, the previous ones still published. Returns the new key id. */
  rotateKeys(): Promise<string>;
  /** While true, the JWKS endpoint answers 503. */
  jwksDown: boolean;
  /**
   * While true, `/.well-known/oauth-authorization-server` answers 404: the issuer serves only its
   * OpenID Connect document (as Keycloak before 26.4 does).
   */
  openIdOnly: boolean;
  /** How many times the JWKS was asked for (served or refused). */
  readonly jwksRequests: () => number;
  /**
   * Play the user's part of an authorization-code sign-in: open `authorizationUrl`, sign in as
   * `accountId` on the provider's development login page, consent, and follow the redirect back to
   * the client (its loopback listener gets the code). Resolves with the final redirect URL.
   */
  signIn(authorizationUrl: string, accountId: string): Promise<string>;
  /** How many introspection requests arrived. */
  readonly introspections: () => number;
  close(): Promise<void>;
}

async function signingKey(): Promise<JWK> {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = privateKey.export({ format: 'jwk' });
  return { ...jwk, kid: `k${Math.random().toString(36).slice(2, 10)}`, alg: 'ES256', use: 'sig' };
}

/** A compact JWS, ES256 (P-256, IEEE P1363 signature), by `key`. */
export function signJwt(key: JWK, claims: Record<string, unknown>, header: Record<string, unknown> = {}): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const input = `${part({ alg: 'ES256', typ: 'at+jwt', kid: key.kid, ...header })}.${part(claims)}`;
  const signature = sign('sha256', Buffer.from(input), {
    key: createPrivateKey({ key: key as JsonWebKey, format: 'jwk' }),
    dsaEncoding: 'ieee-p1363',
  });
  return `${input}.${signature.toString('base64url')}`;
}

/** A fresh ES256 signing key (private JWK with a random kid). */
export { signingKey as newSigningKey };

const SCOPES = 'baton:call baton:decide baton:events';

/** Start the provider on 127.0.0.1 with these clients. */
export async function startIdentityProvider(
  clients: readonly TestClient[],
  users: readonly TestUser[] = [],
  webClients: readonly TestWebClient[] = [],
): Promise<TestIdentityProvider> {
  let keys: JWK[] = [await signingKey()];
  let jwksRequests = 0;
  let introspections = 0;
  let openIdOnly = false;
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const byId = new Map(clients.map((client) => [client.clientId, client]));
  const byAccount = new Map(users.map((user) => [user.accountId, user]));

  const build = () =>
    new Provider(issuer, {
      clients: [
        {
          client_id: CLI_CLIENT_ID,
          application_type: 'native',
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          redirect_uris: ['http://127.0.0.1/callback'],
          token_endpoint_auth_method: 'none',
          id_token_signed_response_alg: 'ES256',
          scope: `openid offline_access ${SCOPES}`,
        },
        ...webClients.map((client) => ({
          client_id: client.clientId,
          client_secret: client.clientSecret,
          grant_types: ['authorization_code'],
          response_types: ['code'],
          redirect_uris: [...client.redirectUris],
          token_endpoint_auth_method: 'client_secret_basic',
          id_token_signed_response_alg: 'ES256',
          scope: 'openid profile email',
        })),
        ...clients.map((client) => ({
          client_id: client.clientId,
          client_secret: client.clientSecret,
          grant_types: ['client_credentials'],
          response_types: [],
          redirect_uris: [],
          scope: client.scope ?? SCOPES,
          token_endpoint_auth_method: 'client_secret_basic',
          id_token_signed_response_alg: 'ES256',
        })),
      ],
      findAccount: (_ctx: unknown, id: string) =>
        byAccount.has(id)
          ? {
              accountId: id,
              claims: () => ({
                sub: id,
                ...(byAccount.get(id)!.name ? { name: byAccount.get(id)!.name } : {}),
                ...(byAccount.get(id)!.groups ? { groups: [...byAccount.get(id)!.groups!] } : {}),
              }),
            }
          : undefined,
      pkce: { required: () => true },
      jwks: { keys: keys as never },
      ttl: { ClientCredentials: 300, AccessToken: 300 },
      scopes: ['openid', 'offline_access', 'profile', 'email', ...SCOPES.split(' ')],
      // A web sign-in reads names and groups from the UserInfo endpoint (scope profile).
      claims: {
        acr: null,
        auth_time: null,
        iss: null,
        sid: null,
        openid: ['sub'],
        profile: ['name', 'groups'],
        email: ['email'],
      },
      features: {
        devInteractions: { enabled: true },
        clientCredentials: { enabled: true },
        introspection: { enabled: true },
        resourceIndicators: {
          enabled: true,
          useGrantedResource: () => true,
          // A resource whose path ends in /opaque gets opaque tokens (for introspection), others JWTs.
          getResourceServerInfo: (_ctx: unknown, resourceIndicator: string) => ({
            scope: SCOPES,
            audience: resourceIndicator,
            accessTokenTTL: 300,
            ...(resourceIndicator.endsWith('/opaque')
              ? { accessTokenFormat: 'opaque' }
              : { accessTokenFormat: 'jwt', jwt: { sign: { alg: 'ES256' } } }),
          }),
        },
      },
      extraTokenClaims: (_ctx: unknown, token: { clientId?: string; accountId?: string }) => {
        const client = token.accountId
          ? byAccount.get(token.accountId)
          : token.clientId
            ? byId.get(token.clientId)
            : undefined;
        return {
          ...(client?.groups ? { groups: [...client.groups] } : {}),
          ...(client?.name ? { name: client.name } : {}),
        };
      },
    });
  let provider = build();
  provider.proxy = false;
  // oidc-provider logs to console.warn about its development settings: keep test output clean.
  let callback = provider.callback();
  server.on('request', (req, res) => {
    if (req.url?.startsWith('/token/introspection')) introspections++;
    if (openIdOnly && req.url?.startsWith('/.well-known/oauth-authorization-server')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    if (req.url?.startsWith('/jwks')) {
      jwksRequests++;
      if (idp.jwksDown) {
        res.writeHead(503, { 'content-type': 'text/plain' }).end('down');
        return;
      }
    }
    callback(req, res);
  });

  const metadata = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as {
    token_endpoint: string;
  };
  const tokenEndpoint = metadata.token_endpoint as string;

  const idp: TestIdentityProvider = {
    issuer,
    tokenEndpoint,
    publicKeys: () => keys.map(({ d: _d, ...pub }) => pub),
    async token(client, options) {
      const response = await fetch(tokenEndpoint, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          resource: options.resource,
          scope: options.scope ?? client.scope ?? SCOPES,
        }),
      });
      const body = (await response.json()) as { access_token?: string; error?: string; error_description?: string };
      if (!body.access_token) throw new Error(`token request failed: ${body.error}: ${body.error_description}`);
      return body.access_token;
    },
    sign: (claims, header = {}) => signJwt(keys[0]!, claims, header),
    async rotateKeys() {
      const fresh = await signingKey();
      keys = [fresh, ...keys];
      provider = build();
      provider.proxy = false;
      callback = provider.callback();
      return fresh.kid!;
    },
    async signIn(authorizationUrl, accountId) {
      const cookies = new Map<string, string>();
      const go = async (url: string, init: RequestInit = {}) => {
        const response = await fetch(url, {
          ...init,
          redirect: 'manual',
          headers: {
            ...(init.headers as Record<string, string>),
            cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
          },
        });
        for (const line of response.headers.getSetCookie()) {
          const [pair] = line.split(';');
          const at = pair!.indexOf('=');
          cookies.set(pair!.slice(0, at), pair!.slice(at + 1));
        }
        return response;
      };
      let url = authorizationUrl;
      for (let step = 0; step < 12; step++) {
        if (!url.startsWith(issuer)) {
          await fetch(url); // the client's own redirect listener: it takes the code
          return url;
        }
        let response = await go(url);
        if (new URL(url).pathname.startsWith('/interaction/') && response.status === 200) {
          const page = await response.text();
          const prompt = /name="prompt" value="(login|consent)"/.exec(page)?.[1];
          if (!prompt) throw new Error(`no sign-in form at ${url}`);
          response = await go(url, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams(prompt === 'login' ? { prompt, login: accountId, password: 'x' } : { prompt }),
          });
        }
        const location = response.headers.get('location');
        if (!location) throw new Error(`sign-in stopped at ${url} (HTTP ${response.status})`);
        url = new URL(location, url).href;
      }
      throw new Error('sign-in did not finish in 12 steps');
    },
    jwksDown: false,
    get openIdOnly() {
      return openIdOnly;
    },
    set openIdOnly(value: boolean) {
      openIdOnly = value;
    },
    jwksRequests: () => jwksRequests,
    introspections: () => introspections,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  return idp;
}
