/**
 * Baton as an OAuth protected resource, for clients: the Protected Resource
 * Metadata document (RFC 9728) at `/.well-known/oauth-protected-resource` and
 * at its path-suffixed form (`/.well-known/oauth-protected-resource/mcp`),
 * served through the SDK's `oauthMetadataResponse`, and the URL the 401
 * challenge points to; and which scope each operation needs: flow tools,
 * prompts and resources and the requester's tools (`baton_requests`,
 * `baton_resume`, `baton_withdraw`) need `baton:call`; `baton_inbox` and
 * `baton_decide` need `baton:decide`. A token lacking it gets the SDK's 403
 * `insufficient_scope` challenge naming the scope.
 */
import {
  getOAuthProtectedResourceMetadataUrl,
  type OAuthMetadata,
  oauthMetadataResponse,
  requireScopes,
} from '@modelcontextprotocol/server';
import { BATON_SCOPES } from '../auth/oauthClaims.js';
import { DECIDE_TOOL, INBOX_TOOL } from './decisionTools.js';
import type { RegisteredFlows } from './registerFlows.js';

/** Where clients learn how to get a token for this server. */
export interface ProtectedResourceOptions {
  /**
   * The resource URL, as tokens must name it in `aud` (e.g. `https://baton.example.com/mcp`). A
   * string is advertised exactly as given (`https://api.example`, no trailing slash added); a
   * `URL` as its `href`.
   */
  readonly resource: URL | string;
  /** The authorization server's metadata (its `issuer` is advertised), e.g. `OAuthVerifier.metadata`. */
  readonly authorizationServer: { readonly issuer: string };
  /** `resource_name` of the document (default `Baton`). */
  readonly resourceName?: string;
}

/** The scopes advertised in `scopes_supported`. */
export const SUPPORTED_SCOPES: readonly string[] = Object.values(BATON_SCOPES);

/** The URL of the path-suffixed metadata document, the one `WWW-Authenticate` names. */
export function resourceMetadataUrl(resource: URL | string): string {
  return getOAuthProtectedResourceMetadataUrl(new URL(resource));
}

/**
 * Routes serving the document: the path-suffixed form and the root form (both the same document).
 * Keys are request paths, as `FlowHttpHandlerOptions.routes` takes them.
 */
export function protectedResourceRoutes(
  options: ProtectedResourceOptions,
): Map<string, (request: Request) => Promise<Response>> {
  const resourceUrl = new URL(options.resource);
  // The `resource` the document names: exactly what tokens carry in `aud` (the SDK would give
  // the URL's `href`, which adds a trailing slash to a bare origin).
  const exact = typeof options.resource === 'string' ? options.resource : options.resource.href;
  const suffixed = new URL(resourceMetadataUrl(resourceUrl)).pathname;
  const metadata = {
    // Only `issuer` is read (the authorization server's own document is not served here).
    oauthMetadata: options.authorizationServer as OAuthMetadata,
    resourceServerUrl: resourceUrl,
    scopesSupported: [...SUPPORTED_SCOPES],
    resourceName: options.resourceName ?? 'Baton',
  };
  const answer = async (request: Request) => {
    // Asked at the root form: answer as at the suffixed one (the SDK routes by the resource's path).
    const url = new URL(request.url);
    url.pathname = suffixed;
    const response = oauthMetadataResponse(new Request(url, request), metadata);
    if (!response) return new Response(null, { status: 404 });
    if (exact === resourceUrl.href || response.status !== 200 || request.method !== 'GET') return response;
    const document = { ...((await response.json()) as Record<string, unknown>), resource: exact };
    const headers = new Headers(response.headers);
    headers.delete('content-length');
    return Response.json(document, { headers });
  };
  return new Map([
    [suffixed, answer],
    ['/.well-known/oauth-protected-resource', answer],
  ]);
}

/** The scope an operation named by `name` needs. */
function scopeFor(name: string): string {
  return name === INBOX_TOOL || name === DECIDE_TOOL ? BATON_SCOPES.decide : BATON_SCOPES.call;
}

/** Make every registered tool, prompt and resource require its scope (see the module comment). */
export function requireBatonScopes(registered: RegisteredFlows): void {
  for (const [name, tool] of registered.tools) tool.update({ scopeChallenge: requireScopes(scopeFor(name)) });
  for (const prompt of registered.prompts.values()) prompt.update({ scopeChallenge: requireScopes(BATON_SCOPES.call) });
  for (const resource of registered.resources.values()) {
    resource.update({ scopeChallenge: requireScopes(BATON_SCOPES.call) });
  }
}
