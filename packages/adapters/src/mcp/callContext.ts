/**
 * Who is calling and what their client can do, read from the SDK's request
 * context. The principal is the verified bearer token's principal over HTTP
 * (`authInfo.extra.principal`, else `authInfo.clientId`), `anonymous` over
 * HTTP without authentication, and the local OS user over stdio; its roles
 * (who may make which decisions) come with the token (`authInfo.extra.roles`)
 * or, over stdio, from the operator (`--roles`). Client
 * capabilities come from the request's own `_meta` envelope on the
 * 2026-07-28 wire and from `initialize` on a 2025-era connection, and are
 * mapped to the engine's input kinds so a flow never asks what the client
 * did not declare. A 2025-era client on stateless HTTP declares nothing any
 * request carries (its `initialize` went to another server instance), so such
 * requests are told apart ({@link isStatelessLegacyHttp}).
 */
import { userInfo } from 'node:os';
import type { ClientInputCapabilities } from '@baton/engine';
import {
  type AuthInfo,
  CLIENT_CAPABILITIES_META_KEY,
  type ClientCapabilities,
  type ServerContext,
} from '@modelcontextprotocol/server';

/** The principal of unauthenticated HTTP callers (every one of them shares it). */
export const ANONYMOUS_PRINCIPAL = 'anonymous';

let cachedLocalUser: string | undefined;

/** The local OS user name: the principal of a stdio connection. */
export function localUser(): string {
  if (cachedLocalUser === undefined) {
    try {
      cachedLocalUser = userInfo().username;
    } catch {
      cachedLocalUser = `uid-${process.getuid?.() ?? 'unknown'}`;
    }
  }
  return cachedLocalUser;
}

/** The principal a verified token stands for: `extra.principal` when set, else `clientId`. */
export function principalOfAuthInfo(auth: AuthInfo): string {
  const principal = auth.extra?.principal;
  return typeof principal === 'string' && principal.length > 0 ? principal : auth.clientId;
}

/**
 * The display name a verified token carries (`authInfo.extra.displayName`: an OAuth `name` claim,
 * or an auth tokens file entry's `name`), for the audit of who decided; `undefined` without one.
 */
export function displayNameOfAuthInfo(auth: AuthInfo | undefined): string | undefined {
  const name = auth?.extra?.displayName;
  return typeof name === 'string' && name.length > 0 ? name : undefined;
}

/** The roles a verified token carries (`authInfo.extra.roles`, from the auth tokens file). */
export function rolesOfAuthInfo(auth: AuthInfo): string[] {
  const roles = auth.extra?.roles;
  return Array.isArray(roles)
    ? roles.filter((role): role is string => typeof role === 'string' && role.length > 0)
    : [];
}

/**
 * The default roles of a request: the verified token's roles over HTTP, none over HTTP without
 * auth, and `stdioRoles` (from `baton serve --stdio --roles a,b`) over stdio.
 */
export function defaultRoles(ctx: ServerContext, stdioRoles: readonly string[] = []): readonly string[] {
  const auth = ctx.http?.authInfo;
  if (auth) return rolesOfAuthInfo(auth);
  if (ctx.http !== undefined) return [];
  return stdioRoles;
}

/**
 * The default principal of a request: the verified token's principal over
 * HTTP, {@link ANONYMOUS_PRINCIPAL} over HTTP without auth, the local user
 * (`os.userInfo().username`) over stdio.
 */
export function defaultPrincipal(ctx: ServerContext): string {
  const auth = ctx.http?.authInfo;
  if (auth) return principalOfAuthInfo(auth);
  if (ctx.http !== undefined) return ANONYMOUS_PRINCIPAL;
  return localUser();
}

/**
 * Map MCP client capabilities to the engine's input kinds. A bare
 * `elicitation: {}` declares form mode (the 2025 meaning); URL mode must be
 * declared explicitly; `sampling` and `roots` by presence.
 *
 * @example `{ elicitation: { form: {} }, roots: {} }` -> `{ form: true, url: false, sampling: false, roots: true }`
 */
export function toInputCapabilities(declared: ClientCapabilities | undefined): ClientInputCapabilities {
  const elicitation = declared?.elicitation as { form?: unknown; url?: unknown } | undefined;
  return {
    form: elicitation !== undefined && (elicitation.form !== undefined || elicitation.url === undefined),
    url: elicitation?.url !== undefined,
    sampling: declared?.sampling !== undefined,
    roots: declared?.roots !== undefined,
  };
}

/**
 * The connection a request came on, as far as a round asks about it: what its client declared at
 * `initialize` (2025-era connections). An `McpServer` is one; a 2026-07-28 request answered
 * without a server (`mcp/directToolCalls.ts`) has {@link NO_CONNECTION}, since it carries its
 * client's capabilities in its own `_meta` envelope.
 */
export interface Connection {
  readonly server: { getClientCapabilities(): ClientCapabilities | undefined };
}

/** The connection of a request served without an `McpServer`: nothing was declared at `initialize`. */
export const NO_CONNECTION: Connection = { server: { getClientCapabilities: () => undefined } };

/**
 * The capabilities the client declared for this request: the request's
 * `_meta` envelope (2026-07-28), else what it declared at `initialize`
 * (2025-era connections; nothing on stateless legacy HTTP).
 */
export function declaredCapabilities(server: Connection, ctx: ServerContext): ClientCapabilities | undefined {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const fromEnvelope = envelope?.[CLIENT_CAPABILITIES_META_KEY] as ClientCapabilities | undefined;
  return fromEnvelope ?? server.server.getClientCapabilities();
}

/**
 * Whether the request is 2025-era traffic on stateless HTTP: it came over HTTP, carries no
 * per-request `_meta` envelope (2026-07-28), and this server saw no `initialize` (stateless:
 * one server per request). Such a client's capabilities are unknown, and it cannot take part
 * in an `input_required` round trip over this transport.
 */
export function isStatelessLegacyHttp(server: Connection, ctx: ServerContext): boolean {
  return (
    ctx.http !== undefined && ctx.mcpReq.envelope === undefined && server.server.getClientCapabilities() === undefined
  );
}
