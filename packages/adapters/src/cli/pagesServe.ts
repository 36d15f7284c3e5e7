/**
 * The decision pages' flags of `baton serve`: `--login-client-id ID` and
 * `--login-client-secret-file FILE` (this server's web client at the
 * `--oauth-issuer`, for the people who sign in to `/inbox` and
 * `/decide/<id>`; the secret is read from a file, so it is in neither the
 * process list nor a log), with `serve`'s `--public-url URL` (parsed for the
 * decision links by `delivery/decisionLinks.ts`), which the pages need to be an
 * origin: the sign-in's redirect URI is `<public-url>/auth/callback`; default
 * the served origin on loopback. The flags are checked with the others; the
 * port is bound with page routes that wait until the flows and the ledger are
 * open ({@link startPages}), then answer from `pages/routes.ts`.
 */
import { readFileSync } from 'node:fs';
import type { KeyRing, Runner } from '@baton/engine';
import type { ClaimMapping } from '../auth/oauthClaims.js';
import { answeringRefusals } from '../http/routeRefusals.js';
import type { ServedRoute } from '../http/serve.js';
import { engineDecisions } from '../pages/engineDecisions.js';
import { messagePage, refusalPage } from '../pages/html.js';
import { createDecisionPages, PAGE_ROUTES } from '../pages/routes.js';
import { createWebLogin } from '../pages/webLogin.js';
import { CliError, usageError } from './cliError.js';

/** The flag table entries (merged into `serve`'s). */
export const PAGES_OPTIONS = {
  'login-client-id': { type: 'string' },
  'login-client-secret-file': { type: 'string' },
} as const;

/** The checked page flags. */
export interface PagesServeFlags {
  readonly clientId: string;
  readonly clientSecret: string;
  readonly publicUrl?: URL;
}

type Values = { readonly [K in keyof typeof PAGES_OPTIONS]?: string } & {
  /** `serve`'s own flag (decision links, `delivery/decisionLinks.ts`); the pages need it to be an origin. */
  readonly 'public-url'?: string;
  readonly 'oauth-issuer'?: string;
  readonly ledger?: string;
  readonly stdio?: boolean;
};

/** `--public-url URL`: an http(s) origin, without path, query or fragment. */
export function parsePublicUrl(value: string, usage: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw usageError(`--public-url expects a URL such as https://baton.example.com, got "${value}"`, usage);
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.pathname !== '/' || url.search || url.hash) {
    throw usageError(
      `--public-url expects the origin of this server (https://host[:port], no path), got "${value}"`,
      usage,
    );
  }
  if (url.protocol === 'http:' && !['localhost', '127.0.0.1', '[::1]'].includes(url.hostname)) {
    throw usageError(`--public-url must be https (plain http only on loopback), got "${value}"`, usage);
  }
  return url;
}

/** `--login-client-secret-file FILE`: the web client's secret, on one line. */
export function readClientSecretFile(secretFile: string, usage: string): string {
  let clientSecret: string;
  try {
    clientSecret = readFileSync(secretFile, 'utf8').trim();
  } catch (error) {
    throw usageError(
      `--login-client-secret-file: cannot read ${secretFile}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
      usage,
    );
  }
  if (clientSecret === '' || clientSecret.includes('\n')) {
    throw usageError(`--login-client-secret-file: ${secretFile} must hold the client secret on one line`, usage);
  }
  return clientSecret;
}

/** Check the page flags; `undefined` without `--login-client-id`. */
export function parsePagesFlags(values: Values, usage: string): PagesServeFlags | undefined {
  const clientId = values['login-client-id'];
  const secretFile = values['login-client-secret-file'];
  if (clientId === undefined) {
    if (secretFile !== undefined) throw usageError('--login-client-secret-file needs --login-client-id', usage);
    return undefined;
  }
  if (values['oauth-issuer'] === undefined) {
    throw usageError('--login-client-id signs people in at the --oauth-issuer: give --oauth-issuer URL too', usage);
  }
  if (values.stdio) throw usageError('--login-client-id applies to --http only', usage);
  if (values.ledger === undefined) {
    throw usageError('the decision pages show decisions kept in a ledger: give --ledger too', usage);
  }
  if (secretFile === undefined) {
    throw usageError('--login-client-id needs --login-client-secret-file FILE (the client secret)', usage);
  }
  const clientSecret = readClientSecretFile(secretFile, usage);
  const publicUrl = values['public-url'] === undefined ? undefined : parsePublicUrl(values['public-url'], usage);
  return { clientId, clientSecret, ...(publicUrl ? { publicUrl } : {}) };
}

/** What the pages need once the server runs. */
export interface PagesStart {
  readonly runner: Runner;
  readonly keys: KeyRing;
  /** The issuer's metadata and the claim mapping of `--oauth-issuer`. */
  readonly metadata: { readonly issuer: string; readonly [field: string]: unknown };
  readonly mapping: ClaimMapping;
  /** The served `/mcp` URL and whether it is bound to loopback. */
  readonly served: URL;
  readonly loopback: boolean;
  readonly onError: (error: Error) => void;
}

/** Page routes to bind now, answering once {@link PendingPages.start} has run. */
export interface PendingPages {
  readonly routes: ReadonlyMap<string, ServedRoute>;
  /**
   * Start answering.
   * @throws CliError when bound beyond loopback without `--public-url`.
   */
  start(start: PagesStart): void;
  /** Start-up failed: the routes answer 503. */
  fail(): void;
}

/** The page routes of `flags`, waiting for {@link PendingPages.start}. */
export function pendingPages(flags: PagesServeFlags): PendingPages {
  let resolve!: (routes: ReadonlyMap<string, ServedRoute>) => void;
  let reject!: (error: Error) => void;
  const ready = new Promise<ReadonlyMap<string, ServedRoute>>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  ready.catch(() => {});
  const routes = new Map<string, ServedRoute>(
    PAGE_ROUTES.map((path) => [
      path,
      answeringRefusals(async (request: Request) => {
        const real = await ready.catch(() => undefined);
        const route = real?.get(path);
        return route
          ? route(request)
          : messagePage(503, 'Not available', 'This server could not start its pages. Please try again later.');
      }, refusalPage),
    ]),
  );
  return {
    routes,
    start(start) {
      if (!flags.publicUrl && !start.loopback) {
        throw new CliError(
          `the decision pages need --public-url (the external https URL of this server, e.g. https://baton.example.com): people are sent back there after signing in`,
        );
      }
      const publicUrl = flags.publicUrl ?? new URL(start.served.origin);
      resolve(
        createDecisionPages({
          decisions: engineDecisions(start.runner),
          login: createWebLogin({
            metadata: start.metadata,
            clientId: flags.clientId,
            clientSecret: flags.clientSecret,
            redirectUri: new URL('/auth/callback', publicUrl),
            mapping: start.mapping,
          }),
          keys: start.keys,
          publicUrl,
          onError: start.onError,
        }),
      );
    },
    fail: () => reject(new Error('the server failed to start')),
  };
}
