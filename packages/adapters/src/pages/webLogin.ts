/**
 * The sign-in of the decision pages: OpenID Connect authorization code with
 * PKCE (S256), a `state` and a `nonce`, through openid-client, as a
 * confidential web client of the issuer given to `--oauth-issuer`. `begin`
 * makes the authorization URL and the pending login (verifier, state, nonce
 * and where to go back), which the caller keeps in a sealed cookie;
 * `complete` checks the callback against it, exchanges the code, and reads
 * who signed in from the ID token's claims (and the UserInfo endpoint's, for
 * providers that put roles or groups there only) through the same mapping as
 * the OAuth resource server (`auth/oauthClaims.ts`): principal `<iss>#<sub>` (or
 * the `--principal-claim`), roles from `--roles-claim` and `--group-roles`,
 * a display name for display only. Tokens are used once and never kept.
 */
import * as oidc from 'openid-client';
import { type ClaimMapping, displayNameOf, oauthPrincipal, rolesOf } from '../auth/oauthClaims.js';

/** Who signed in. */
export interface SignedIn {
  readonly principal: string;
  readonly roles: readonly string[];
  /** For display only. */
  readonly name?: string;
}

/** A login begun and not finished yet: what the callback is checked against. */
export interface PendingLogin {
  readonly verifier: string;
  readonly state: string;
  readonly nonce: string;
  /** The page to go back to (a path of this server). */
  readonly returnTo: string;
}

/** Options of {@link createWebLogin}. */
export interface WebLoginOptions {
  /** The issuer's discovered metadata (`issuer`, `authorization_endpoint`, `token_endpoint`, …). */
  readonly metadata: { readonly issuer: string; readonly [field: string]: unknown };
  readonly clientId: string;
  readonly clientSecret: string;
  /** Where the issuer sends the browser back: `<public URL>/auth/callback`. */
  readonly redirectUri: URL;
  /** The claim mapping of the resource server (`issuer` as the metadata names it). */
  readonly mapping: ClaimMapping;
  /** Scopes asked (default `openid profile email`). */
  readonly scope?: string;
}

/** A sign-in that did not complete: a sentence for the page (never a token or secret). */
export class SignInError extends Error {
  override readonly name = 'SignInError';
}

/** The OpenID Connect sign-in. */
export interface WebLogin {
  /** The authorization URL to send the browser to, and the pending login to keep. */
  begin(returnTo: string): Promise<{ readonly url: URL; readonly pending: PendingLogin }>;
  /**
   * Finish at the callback (`callback`: the request's URL, whose query carries the code).
   * @throws SignInError when the provider refused, the state or nonce do not match, or the
   *   code exchange or the claims fail.
   */
  complete(callback: URL, pending: PendingLogin): Promise<SignedIn>;
}

/** Create the sign-in for one issuer and client. */
export function createWebLogin(options: WebLoginOptions): WebLogin {
  const config = new oidc.Configuration(
    options.metadata as oidc.ServerMetadata,
    options.clientId,
    options.clientSecret,
    oidc.ClientSecretBasic(options.clientSecret),
  );
  if (new URL(options.metadata.issuer).protocol === 'http:') oidc.allowInsecureRequests(config);
  const scope = options.scope ?? 'openid profile email';
  const principalClaim = options.mapping.principalClaim ?? 'sub';

  return {
    async begin(returnTo) {
      const pending: PendingLogin = {
        verifier: oidc.randomPKCECodeVerifier(),
        state: oidc.randomState(),
        nonce: oidc.randomNonce(),
        returnTo,
      };
      const url = oidc.buildAuthorizationUrl(config, {
        redirect_uri: options.redirectUri.href,
        scope,
        response_type: 'code',
        code_challenge: await oidc.calculatePKCECodeChallenge(pending.verifier),
        code_challenge_method: 'S256',
        state: pending.state,
        nonce: pending.nonce,
      });
      return { url, pending };
    },

    async complete(callback, pending) {
      const error = callback.searchParams.get('error');
      if (error) {
        throw new SignInError(
          error === 'access_denied'
            ? 'The sign-in was cancelled or refused at your identity provider.'
            : `Your identity provider refused the sign-in (${error.slice(0, 60)}).`,
        );
      }
      // The callback as the provider addressed it (the public URL), with the query it carried.
      const current = new URL(options.redirectUri);
      current.search = callback.search;
      let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
      try {
        tokens = await oidc.authorizationCodeGrant(config, current, {
          pkceCodeVerifier: pending.verifier,
          expectedState: pending.state,
          expectedNonce: pending.nonce,
          idTokenExpected: true,
        });
      } catch (cause) {
        const code = (cause as { code?: string; error?: string }).error ?? (cause as { code?: string }).code;
        throw new SignInError(`The sign-in could not be completed${code ? ` (${code})` : ''}. Please sign in again.`);
      }
      const idClaims = (tokens.claims() ?? {}) as Record<string, unknown>;
      let userinfo: Record<string, unknown> = {};
      if (typeof options.metadata.userinfo_endpoint === 'string' && typeof idClaims.sub === 'string') {
        userinfo = (await oidc.fetchUserInfo(config, tokens.access_token, idClaims.sub).catch(() => ({}))) as Record<
          string,
          unknown
        >;
      }
      // The ID token wins where both say something; the UserInfo answer fills in (roles, names).
      const claims = { ...userinfo, ...idClaims };
      const subject = claims[principalClaim];
      if (typeof subject !== 'string' || subject.length === 0) {
        throw new SignInError(`Your identity provider did not say who you are (no "${principalClaim}" claim).`);
      }
      const name = displayNameOf(claims);
      return {
        principal: oauthPrincipal(options.mapping.issuer, subject),
        roles: rolesOf(claims, options.mapping),
        ...(name ? { name } : {}),
      };
    },
  };
}
