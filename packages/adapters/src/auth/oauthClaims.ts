/**
 * What a verified access token's claims mean to Baton: the principal, the
 * roles, the scopes and a display name. The principal is the issuer and the
 * principal claim (`sub` by default) joined as `<iss>#<sub>`: stable for as
 * long as the provider keeps the account, never the e-mail or a name (those
 * change, and two people can share one), and unambiguous, because an issuer
 * identifier has no fragment. Roles are read from a dotted claim path
 * (`roles`, `groups`, `realm_access.roles`), optionally mapped from groups to
 * roles. Scopes come from `scope` (RFC 9068, space-separated) or `scp` (Entra
 * ID's string, Okta's array); a token carrying neither gets
 * {@link DEFAULT_SCOPES_WITHOUT_CLAIM}. The display name (`name`,
 * `preferred_username`, `email`) is for display only, never for decisions.
 * Both JWT verification and token introspection feed their claims here.
 */
import type { AuthInfo } from '@modelcontextprotocol/server';

/** The scopes Baton knows: run flows (and follow one's own requests), make decisions, send events. */
export const BATON_SCOPES = {
  call: 'baton:call',
  decide: 'baton:decide',
  events: 'baton:events',
} as const;

/**
 * The scopes of a token that carries no `scope` or `scp` claim at all (many providers leave it
 * out of client-credentials tokens): `baton:call` only. Deciding takes an explicit `baton:decide`.
 */
export const DEFAULT_SCOPES_WITHOUT_CLAIM: readonly string[] = [BATON_SCOPES.call];

/** How claims become a principal and roles (see `createOAuthVerifier`). */
export interface ClaimMapping {
  /** The issuer, exactly as in `iss`. */
  readonly issuer: string;
  /** Dotted path of the roles claim (default `roles`; Keycloak: `realm_access.roles`). */
  readonly rolesClaim?: string;
  /** The claim naming the account (default `sub`; Entra ID: `oid` is stable too). */
  readonly principalClaim?: string;
  /**
   * Groups to roles: when given, each value of the roles claim is a group name looked up here,
   * and only mapped groups give roles (an unmapped group gives none).
   */
  readonly groupRoles?: Readonly<Record<string, readonly string[]>>;
}

/** The principal id of an account at an issuer: `<iss>#<sub>`. */
export function oauthPrincipal(issuer: string, subject: string): string {
  return `${issuer}#${subject}`;
}

/** The value at a dotted path (`realm_access.roles`), or `undefined`. A key holding dots itself is tried whole first. */
function claimAt(claims: Readonly<Record<string, unknown>>, path: string): unknown {
  if (Object.hasOwn(claims, path)) return claims[path];
  let value: unknown = claims;
  for (const part of path.split('.')) {
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, part)) {
      return undefined;
    }
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/** Strings of a claim that is a string (space-separated) or an array of strings. */
function strings(value: unknown): string[] {
  if (typeof value === 'string') return value.split(' ').filter((part) => part.length > 0);
  if (Array.isArray(value)) return value.filter((part): part is string => typeof part === 'string' && part.length > 0);
  return [];
}

/** The scopes a token grants. */
export function scopesOf(claims: Readonly<Record<string, unknown>>): string[] {
  if (claims.scope === undefined && claims.scp === undefined) return [...DEFAULT_SCOPES_WITHOUT_CLAIM];
  return [...new Set([...strings(claims.scope), ...strings(claims.scp)])];
}

/** The roles a token gives, per the mapping. */
export function rolesOf(claims: Readonly<Record<string, unknown>>, mapping: ClaimMapping): string[] {
  const values = strings(claimAt(claims, mapping.rolesClaim ?? 'roles'));
  const groups = mapping.groupRoles;
  const roles = groups ? values.flatMap((group) => (Object.hasOwn(groups, group) ? [...groups[group]!] : [])) : values;
  return [...new Set(roles)];
}

/** A name to show for the account, never used to decide anything. */
export function displayNameOf(claims: Readonly<Record<string, unknown>>): string | undefined {
  for (const claim of ['name', 'preferred_username', 'email']) {
    const value = claims[claim];
    if (typeof value === 'string' && value.length > 0) return value;
  }
  return undefined;
}

/** Why claims cannot make an `AuthInfo` (a 401 reason), or the `AuthInfo`. */
export function authInfoOf(
  token: string,
  claims: Readonly<Record<string, unknown>>,
  mapping: ClaimMapping,
  resource: URL,
): AuthInfo | string {
  const claimName = mapping.principalClaim ?? 'sub';
  const subject = claims[claimName];
  if (typeof subject !== 'string' || subject.length === 0) return `the token has no "${claimName}" claim`;
  if (typeof claims.exp !== 'number') return 'the token has no expiry';
  const principal = oauthPrincipal(mapping.issuer, subject);
  const clientId = [claims.client_id, claims.azp, claims.appid].find(
    (value): value is string => typeof value === 'string' && value.length > 0,
  );
  const displayName = displayNameOf(claims);
  return {
    token,
    clientId: clientId ?? principal,
    scopes: scopesOf(claims),
    expiresAt: claims.exp,
    resource,
    extra: {
      principal,
      roles: rolesOf(claims, mapping),
      issuer: mapping.issuer,
      subject,
      ...(displayName ? { displayName } : {}),
    },
  };
}
