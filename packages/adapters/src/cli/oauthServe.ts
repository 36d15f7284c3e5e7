/**
 * The OAuth flags of `baton serve`: `--oauth-issuer URL`, `--oauth-audience
 * URL` (default: the served `/mcp` URL), `--roles-claim PATH` (default
 * `roles`), `--principal-claim NAME` (default `sub`), `--group-roles FILE`
 * (a JSON object group -> role or [roles]) and `--introspection-client FILE`
 * (`{ "client_id", "client_secret" }`, for opaque tokens). They are checked
 * with the other flags; the issuer is discovered before the port is bound (an
 * unreachable issuer is one line and exit 1, with no retry: a supervisor
 * restarts the server), and the verifier is made once the served URL, the
 * default audience, is known. Refused tokens are logged on stderr with the
 * reason, never the token.
 */
import { readFile } from 'node:fs/promises';
import { loadIntrospectionCredentials } from '../auth/introspection.js';
import type { ClaimMapping } from '../auth/oauthClaims.js';
import {
  createOAuthVerifier,
  discoverOAuthIssuer,
  type IssuerMetadata,
  type OAuthVerifier,
} from '../auth/oauthVerifier.js';
import { CliError, oneLine, usageError } from './cliError.js';

/** The checked OAuth flags. */
export interface OAuthServeFlags {
  readonly issuer: string;
  /** `--oauth-audience` exactly as given (checked to be a URL, never normalised: `aud` must equal it). */
  readonly audience?: string;
  readonly rolesClaim?: string;
  readonly principalClaim?: string;
  readonly groupRolesFile?: string;
  readonly introspectionFile?: string;
}

/** The flag table entries (merged into `serve`'s). */
export const OAUTH_OPTIONS = {
  'oauth-issuer': { type: 'string' },
  'oauth-audience': { type: 'string' },
  'roles-claim': { type: 'string' },
  'principal-claim': { type: 'string' },
  'group-roles': { type: 'string' },
  'introspection-client': { type: 'string' },
} as const;

type Values = { readonly [K in keyof typeof OAUTH_OPTIONS]?: string } & {
  readonly 'auth-tokens'?: string;
  readonly stdio?: boolean;
};

/** Check the OAuth flags; `undefined` without `--oauth-issuer` (the others then are usage errors). */
export function parseOAuthFlags(values: Values, usage: string): OAuthServeFlags | undefined {
  const issuer = values['oauth-issuer'];
  if (issuer === undefined) {
    const stray = (Object.keys(OAUTH_OPTIONS) as (keyof typeof OAUTH_OPTIONS)[]).find((k) => values[k] !== undefined);
    if (stray) throw usageError(`--${stray} needs --oauth-issuer URL`, usage);
    return undefined;
  }
  if (values['auth-tokens'] !== undefined) {
    throw usageError('give --oauth-issuer or --auth-tokens, not both', usage);
  }
  if (values.stdio) throw usageError('--oauth-issuer applies to --http only', usage);
  const audience = values['oauth-audience'];
  if (audience !== undefined) {
    try {
      new URL(audience);
    } catch {
      throw usageError(`--oauth-audience expects a URL, got "${values['oauth-audience']}"`, usage);
    }
  }
  for (const flag of ['roles-claim', 'principal-claim'] as const) {
    const value = values[flag];
    if (value !== undefined && !/^[A-Za-z0-9_:/.-]{1,200}$/.test(value)) {
      throw usageError(
        `--${flag} expects a claim name${flag === 'roles-claim' ? ' or dotted path' : ''}, got "${value}"`,
      );
    }
  }
  return {
    issuer,
    ...(audience ? { audience } : {}),
    ...(values['roles-claim'] !== undefined ? { rolesClaim: values['roles-claim'] } : {}),
    ...(values['principal-claim'] !== undefined ? { principalClaim: values['principal-claim'] } : {}),
    ...(values['group-roles'] !== undefined ? { groupRolesFile: values['group-roles'] } : {}),
    ...(values['introspection-client'] !== undefined ? { introspectionFile: values['introspection-client'] } : {}),
  };
}

/**
 * Read a `--group-roles` file: `{ "<group>": "<role>" | ["<role>", ...] }`.
 * @throws Error with one line naming the file when unreadable or malformed.
 */
export async function loadGroupRoles(path: string): Promise<Record<string, string[]>> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new Error(
      `cannot read group roles file ${path}: ${(error as NodeJS.ErrnoException).code ?? 'not valid JSON'}`,
    );
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error(`group roles file ${path} must hold a JSON object mapping each group to a role or a list of roles`);
  }
  const mapping: Record<string, string[]> = {};
  for (const [group, value] of Object.entries(parsed)) {
    const roles = typeof value === 'string' ? [value] : value;
    if (!Array.isArray(roles) || !roles.every((role) => typeof role === 'string' && role.length > 0)) {
      throw new Error(`group roles file ${path}: group ${JSON.stringify(group)} must map to a role or a list of roles`);
    }
    mapping[group] = [...new Set(roles as string[])];
  }
  return mapping;
}

/** What start-up prepares before binding: the issuer's metadata and the files, read. */
export interface PreparedOAuth {
  readonly flags: OAuthServeFlags;
  readonly metadata: IssuerMetadata;
  /** How claims become a principal and roles (shared by the verifier and the pages' sign-in). */
  readonly mapping: ClaimMapping;
  /** Make the verifier for the resource URL (the served URL unless `--oauth-audience`). */
  verifier(served: URL): Promise<OAuthVerifier>;
}

/** Read the files and discover the issuer; failures are one-line {@link CliError}s. */
export async function prepareOAuth(flags: OAuthServeFlags): Promise<PreparedOAuth> {
  const fail = (error: unknown) => Promise.reject(new CliError(oneLine(error)));
  const groupRoles = flags.groupRolesFile ? await loadGroupRoles(flags.groupRolesFile).catch(fail) : undefined;
  const introspection = flags.introspectionFile
    ? await loadIntrospectionCredentials(flags.introspectionFile).catch(fail)
    : undefined;
  const metadata = await discoverOAuthIssuer(flags.issuer).catch(fail);
  return {
    flags,
    metadata,
    mapping: {
      issuer: metadata.issuer,
      ...(flags.rolesClaim ? { rolesClaim: flags.rolesClaim } : {}),
      ...(flags.principalClaim ? { principalClaim: flags.principalClaim } : {}),
      ...(groupRoles ? { groupRoles } : {}),
    },
    verifier: (served) =>
      createOAuthVerifier({
        issuer: flags.issuer,
        audience: flags.audience ?? served,
        metadata,
        ...(flags.rolesClaim ? { rolesClaim: flags.rolesClaim } : {}),
        ...(flags.principalClaim ? { principalClaim: flags.principalClaim } : {}),
        ...(groupRoles ? { groupRoles } : {}),
        ...(introspection ? { introspection } : {}),
        onReject: (reason) => process.stderr.write(`baton: ${reason}\n`),
      }).catch(fail),
  };
}
