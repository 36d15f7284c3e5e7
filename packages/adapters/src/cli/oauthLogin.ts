/**
 * `baton call --oauth`: the SDK client's OAuth flow against a server that
 * answers 401 with a Protected Resource Metadata challenge (RFC 9728). With
 * `--client-id ID --client-secret-file FILE` it is client credentials (the
 * SDK's `ClientCredentialsProvider`); otherwise authorization code with PKCE:
 * a one-shot listener on 127.0.0.1 takes the redirect, the authorization URL
 * is printed on stderr (and opened in a browser when one can be started:
 * `$BROWSER`, `xdg-open` or `open`), the `state` is checked, and the client
 * registers itself dynamically when no `--client-id` is given; the authorization server found
 * when the sign-in began is kept until the code comes back, so the SDK refuses to send the code
 * to another one (SEP-2352: `saveDiscoveryState`/`discoveryState`). Tokens (and a
 * dynamically registered client) are cached in
 * `$XDG_CONFIG_HOME/baton/oauth.json` (else `~/.config/baton/oauth.json`),
 * per server URL and client, in a folder of mode 0700 and a file of mode 0600;
 * a cached token the server refuses is replaced by a new flow. The cache is
 * never printed.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import {
  ClientCredentialsProvider,
  type OAuthClientInformationContext,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type StoredOAuthClientInformation,
  type StoredOAuthTokens,
} from '@modelcontextprotocol/client';
import { CliError } from './cliError.js';

/** The flags of `baton call` for OAuth. */
export const OAUTH_CALL_OPTIONS = {
  oauth: { type: 'boolean' },
  'client-id': { type: 'string' },
  'client-secret-file': { type: 'string' },
} as const;

/** What `--oauth` was given. */
export interface OAuthCallFlags {
  readonly clientId?: string;
  readonly clientSecretFile?: string;
}

/** The folder of Baton's per-user files: `$XDG_CONFIG_HOME/baton`, else `~/.config/baton`. */
export function configDir(): string {
  const base = process.env.XDG_CONFIG_HOME?.trim() ? process.env.XDG_CONFIG_HOME : join(homedir(), '.config');
  return join(base, 'baton');
}

interface CacheEntry {
  tokens?: StoredOAuthTokens;
  client?: StoredOAuthClientInformation;
  /** The redirect URI the cached client was registered with (the loopback port changes per run). */
  redirect?: string;
  /** The authorization server first used with this server and client (trusted on first use). */
  issuer?: string;
}

/** The token cache: one JSON file, entries keyed by server URL and client. */
class TokenCache {
  readonly #file = join(configDir(), 'oauth.json');
  constructor(readonly key: string) {}

  #all(): Record<string, CacheEntry> {
    try {
      const parsed = JSON.parse(readFileSync(this.#file, 'utf8'));
      return typeof parsed === 'object' && parsed !== null ? parsed : {};
    } catch {
      return {};
    }
  }

  get(): CacheEntry {
    return this.#all()[this.key] ?? {};
  }

  update(change: Partial<CacheEntry>): void {
    const dir = configDir();
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
    const all = this.#all();
    all[this.key] = { ...all[this.key], ...change };
    const temporary = `${this.#file}.${process.pid}.tmp`;
    writeFileSync(temporary, `${JSON.stringify(all, null, 2)}\n`, { mode: 0o600 });
    chmodSync(temporary, 0o600);
    renameSync(temporary, this.#file);
  }
}

/**
 * The issuer stamp of a client id given on the command line: the authorization server it was
 * first used with for this server, remembered in the cache (trust on first use), so that the SDK
 * refuses to send the credential to another one later (SEP-2352).
 */
function stampedIssuer(cache: TokenCache, offered: string | undefined): string | undefined {
  const known = cache.get().issuer;
  if (known === undefined && offered !== undefined) cache.update({ issuer: offered });
  return known ?? offered;
}

/** Client credentials, with the token cached. */
class CachedClientCredentials extends ClientCredentialsProvider {
  constructor(
    clientId: string,
    clientSecret: string,
    readonly cache: TokenCache,
  ) {
    super({ clientId, clientSecret, clientName: 'baton call' });
  }
  override clientInformation(ctx?: OAuthClientInformationContext): StoredOAuthClientInformation {
    const issuer = stampedIssuer(this.cache, ctx?.issuer);
    return { ...super.clientInformation(), ...(issuer ? { issuer } : {}) };
  }
  override tokens(): StoredOAuthTokens | undefined {
    return this.cache.get().tokens;
  }
  override saveTokens(tokens: StoredOAuthTokens): void {
    this.cache.update({ tokens });
  }
}

/** An `https:` URL with a path: a Client ID Metadata Document, not a plain client id. */
function isMetadataDocumentUrl(clientId: string): boolean {
  try {
    const url = new URL(clientId);
    return url.protocol === 'https:' && url.pathname !== '/';
  } catch {
    return false;
  }
}

/** Try to open `url` in a browser; says nothing when none starts (the URL is printed anyway). */
function openBrowser(url: string): void {
  const command = process.env.BROWSER || (process.platform === 'darwin' ? 'open' : 'xdg-open');
  try {
    const child = spawn(command, [url], { stdio: 'ignore', detached: true });
    child.on('error', () => {});
    child.unref();
  } catch {
    // no browser: the printed URL is the way
  }
}

/** Authorization code with PKCE, redirected to a one-shot loopback listener. */
class LoopbackAuthorization implements OAuthClientProvider {
  #verifier = '';
  /**
   * What discovery found when this sign-in began (the authorization server, its metadata, the
   * resource's metadata), kept as long as the code verifier: the SDK checks on the callback leg
   * that the code goes back to the same authorization server (SEP-2352). Dropped once the tokens
   * are saved, so the next sign-in discovers again (a server may move to another issuer).
   */
  #discovery: OAuthDiscoveryState | undefined;
  /** The `state` of the current authorization: a redirect of an earlier one is refused. */
  #state = randomBytes(16).toString('base64url');
  /** The redirect of the current sign-in (a new one per authorization: a step-up signs in again). */
  #callback!: Promise<URLSearchParams>;
  #resolveCallback!: (params: URLSearchParams) => void;
  #rejectCallback!: (error: Error) => void;

  constructor(
    readonly server: Server,
    readonly redirect: string,
    readonly cache: TokenCache,
    readonly clientId: string | undefined,
    readonly say: (line: string) => void,
  ) {
    this.#expectCallback();
    server.on('request', (req, res) => {
      const url = new URL(req.url ?? '/', redirect);
      if (url.pathname !== new URL(redirect).pathname) {
        res.writeHead(404).end();
        return;
      }
      if (url.searchParams.get('state') !== this.#state) {
        res.writeHead(400, { 'content-type': 'text/plain' }).end('Unexpected state: close this page and try again.');
        return;
      }
      const error = url.searchParams.get('error');
      res
        .writeHead(200, { 'content-type': 'text/plain' })
        .end(error ? 'Sign-in failed: you can close this page.' : 'Signed in: you can close this page.');
      if (error) this.#rejectCallback(new CliError(`sign-in failed at the identity provider: ${error}`));
      else this.#resolveCallback(url.searchParams);
    });
  }

  #expectCallback(): void {
    this.#callback = new Promise((resolve, reject) => {
      this.#resolveCallback = resolve;
      this.#rejectCallback = reject;
    });
    this.#callback.catch(() => {});
  }

  get redirectUrl(): string {
    return this.redirect;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'baton call',
      redirect_uris: [this.redirect],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  state(): string {
    this.#state = randomBytes(16).toString('base64url');
    return this.#state;
  }
  /**
   * `--client-id https://…`: a Client ID Metadata Document URL (SEP-991). The SDK uses it as the
   * client id where the authorization server advertises `client_id_metadata_document_supported`,
   * else the client registers dynamically.
   */
  get clientMetadataUrl(): string | undefined {
    return this.clientId && isMetadataDocumentUrl(this.clientId) ? this.clientId : undefined;
  }
  clientInformation(ctx?: OAuthClientInformationContext): StoredOAuthClientInformation | undefined {
    if (this.clientId && !this.clientMetadataUrl) {
      const issuer = stampedIssuer(this.cache, ctx?.issuer);
      return { client_id: this.clientId, ...(issuer ? { issuer } : {}) };
    }
    const cached = this.cache.get();
    return cached.redirect === this.redirect ? cached.client : undefined;
  }
  saveClientInformation(client: StoredOAuthClientInformation): void {
    this.cache.update({ client, redirect: this.redirect });
  }
  tokens(): StoredOAuthTokens | undefined {
    return this.cache.get().tokens;
  }
  saveTokens(tokens: StoredOAuthTokens): void {
    this.cache.update({ tokens });
    this.#discovery = undefined;
  }
  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.#discovery = state;
  }
  discoveryState(): OAuthDiscoveryState | undefined {
    return this.#discovery;
  }
  redirectToAuthorization(url: URL): void {
    this.#expectCallback();
    this.say(`Sign in to continue: open ${url.href}`);
    openBrowser(url.href);
  }
  saveCodeVerifier(verifier: string): void {
    this.#verifier = verifier;
  }
  codeVerifier(): string {
    return this.#verifier;
  }
  /** The redirect's parameters, once the user has signed in. */
  callback(): Promise<URLSearchParams> {
    return this.#callback;
  }
}

/** The provider for a call, and what the caller does after an interactive redirect. */
export interface CallAuth {
  readonly provider: OAuthClientProvider;
  /** Authorization code only: the redirect's parameters once the user has signed in. */
  readonly callback?: () => Promise<URLSearchParams>;
  close(): Promise<void>;
}

/** Set up `--oauth` for a call to `server`. */
export async function createCallAuth(
  server: URL,
  flags: OAuthCallFlags,
  say: (line: string) => void,
): Promise<CallAuth> {
  if (flags.clientSecretFile !== undefined) {
    let secret: string;
    try {
      secret = (await readFile(flags.clientSecretFile, 'utf8')).trim();
    } catch (error) {
      throw new CliError(
        `cannot read --client-secret-file ${flags.clientSecretFile}: ${(error as NodeJS.ErrnoException).code ?? error}`,
      );
    }
    if (secret === '') throw new CliError(`--client-secret-file ${flags.clientSecretFile} is empty`);
    const cache = new TokenCache(`${server.href} client_credentials ${flags.clientId}`);
    return { provider: new CachedClientCredentials(flags.clientId!, secret, cache), close: async () => {} };
  }
  const listener = createServer();
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const redirect = `http://127.0.0.1:${(listener.address() as AddressInfo).port}/callback`;
  const cache = new TokenCache(`${server.href} authorization_code ${flags.clientId ?? '(registered)'}`);
  const provider = new LoopbackAuthorization(listener, redirect, cache, flags.clientId, say);
  return {
    provider,
    callback: () => provider.callback(),
    close: () =>
      new Promise<void>((resolve) => {
        listener.close(() => resolve());
        listener.closeAllConnections();
      }),
  };
}
