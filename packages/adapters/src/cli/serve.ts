/**
 * `baton serve <flows-module> (--http HOST:PORT | --stdio) [--ledger URL]
 * [--ttl SECONDS] [--max-ttl SECONDS] [--auth-tokens FILE | --oauth-issuer URL
 * ...(see oauthServe.ts)] [--roles a,b]
 * [--wait-in-call SECONDS] [--task-poll SECONDS] [--notify-webhook URL] [--notify-principals
 * hash|id] [--store-principal-names] [--audit] [--inspect MODULE]
 * [--allow-replays] [--round-budget MS] [--otlp URL]`: the DESIGN.md section 5 contract.
 * Keys come from `BATON_KEYS` (comma-separated base64url secrets of at least
 * 32 random bytes; the first mints, all verify; `baton keygen` prints one),
 * or a random per-process key with a warning (refused on a ledger that holds
 * requests sealed under other key ids: `foreignLedger.ts`). With `--ledger` every flow is
 * one-time; without one, flows declared `needsLedger` are left out, one
 * warning line each. Over HTTP (stateless Streamable HTTP at `/mcp`) the
 * principal is the bearer token's principal from `--auth-tokens` (unknown or
 * missing token: 401), with the roles the file gives it, or, with
 * `--oauth-issuer`, `<iss>#<sub>` of an access token from the identity provider
 * with the roles of its claims (the issuer is discovered before the port is
 * bound), or `anonymous`; over
 * stdio it is the local user, with the roles of `--roles`. With a ledger and
 * flows that await decisions, the decision tools are served too; a round waits
 * for decisions (and for durable steps that outlive `--round-budget`) up to
 * `--wait-in-call` seconds per call, and
 * `--notify-webhook` POSTs each notification (with a ledger: `decision.requested`,
 * `decision.made`, `request.ended`, `flow.notification`). Over HTTP,
 * `GET /healthz` and `GET /metrics` answer too (`observability/observability.ts`), and with
 * `--login-client-id` the decision pages `/inbox` and `/decide/<id>` (`pagesServe.ts`).
 *
 * The configuration comes from the flags, the `BATON_*` environment variables named after them
 * and a `baton.config.ts` (`defineConfig` from `@baton/adapters`), in that order of precedence;
 * `--print-config` prints the effective configuration with the source of each value, secrets
 * redacted, and exits. This module is the command: its synopsis, help and flag table, and
 * `run()`, which hands each job to a module of `serve/`: `config.ts` (the one model of the
 * configuration), `sources.ts` (flags, environment and file gathered), `checks.ts` (the checks
 * that need no flows), `printConfig.ts`, and `wiring.ts` (the start-up proper).
 *
 * Start-up checks everything that needs no flows first (flags, keys, the
 * ledger URL, the tokens file, then binds the port), then loads the flows and
 * opens the ledger (a taken port leaves no database behind); its warnings are
 * printed only once it has succeeded, so on any failure the one line saying
 * what is wrong is all it prints: it closes what it had opened, removes its
 * signal listeners and exits non-zero. The listening URL (or "on stdio") is printed
 * on stderr once ready; SIGINT and SIGTERM close the server, the inspector (when
 * it has `stop()`), the audit log and the ledger. Over stdio, stdout belongs to
 * the transport: once serving starts, what anything else prints there
 * (`console.log`, an inspector module such as Stately's Sky inspector) goes to
 * stderr.
 */

import { runHint } from './runAs.js';
import { checkServeConfig } from './serve/checks.js';
import { printedConfig } from './serve/printConfig.js';
import { gatherSources, SERVE_FLAGS } from './serve/sources.js';
import { startServing } from './serve/wiring.js';

/** The command's synopsis, as `--help`, usage errors and the README show it. */
export const USAGE =
  'baton serve <flows-module> (--http HOST:PORT | --stdio) [--ledger sqlite:PATH|postgres://...|memory:] [--ttl SECONDS] [--max-ttl SECONDS] [--auth-tokens FILE | --oauth-issuer URL [--oauth-audience URL] [--roles-claim PATH] [--principal-claim NAME] [--group-roles FILE] [--introspection-client FILE] [--login-client-id ID --login-client-secret-file FILE]] [--roles ROLE,...] [--wait-in-call SECONDS] [--task-poll SECONDS] [--notify-webhook URL] [--notify-principals hash|id] [--notify-secret whsec_...] [--notify-secrets-file FILE] [--event-secret NAME=whsec_...]... [--event-secrets-file FILE] [--public-url URL] [--otlp URL] [--no-scheduler] [--store-principal-names] [--audit] [--inspect MODULE] [--allow-replays] [--round-budget MS] [--config FILE] [--print-config]';

/** The help of `baton serve`, with the way to run it that fits how it was started. */
function help(): string {
  return `usage: ${USAGE}

Serve the flows a module exports as MCP tools (and prompts or resources, per its "expose" export).

  --http HOST:PORT     stateless Streamable HTTP at http://HOST:PORT/mcp (port 0 picks a free one);
                       GET /healthz (200, or 503 when the ledger does not answer) and GET /metrics
                       (Prometheus text) answer there too, without a bearer token
  --stdio              stdio (2026-07-28 and 2025-era clients)
  --ledger URL         sqlite:PATH, postgres://... or memory: (every flow becomes one-time); without
                       one, flows that need a ledger are left out with a warning; with one, flows
                       that await decisions by others come with the tools baton_inbox,
                       baton_decide, baton_requests, baton_resume and baton_withdraw
  --ttl SECONDS        lifetime of a requestState (default 1800, at most --max-ttl)
  --max-ttl SECONDS    longest lifetime of any state (default 2592000: 30 days, at most 366 days); a state
                       waiting on a deadline lives until it plus 5 minutes, and a flow that waits longer
                       than this allows fails at start-up
  --auth-tokens FILE   JSON object token -> principal id, or token -> {"principal": "bob", "roles":
                       ["manager"]}; other callers get HTTP 401 (HTTP only); tokens need at least
                       16 characters
  --oauth-issuer URL   accept access tokens of this OAuth/OpenID issuer instead (JWTs checked against
                       its JWKS: iss, aud, exp/nbf with 30 s tolerance, RS/PS/ES/EdDSA only); serves
                       /.well-known/oauth-protected-resource; scopes baton:call, baton:decide; the
                       principal is "<iss>#<sub>"; not with --auth-tokens
  --oauth-audience URL the resource URL tokens must name in aud, compared exactly as given (no
                       trailing slash added) and named so in the metadata (default: the served /mcp
                       URL; give the public URL behind a proxy)
  --roles-claim PATH   claim (dotted path) holding roles or groups (default roles; Keycloak:
                       realm_access.roles)
  --principal-claim NAME
                       claim naming the account (default sub)
  --group-roles FILE   JSON object group -> role or [roles], applied to the roles claim's values
                       (only mapped groups give roles)
  --introspection-client FILE
                       {"client_id", "client_secret"} of this server at the issuer: opaque tokens
                       are checked by introspection (RFC 7662), answers cached up to 5 minutes
  --login-client-id ID this server's web client at the --oauth-issuer: serves the decision pages
                       /inbox and /decide/<id>, where people sign in (authorization code with PKCE)
                       and decide; needs --ledger
  --login-client-secret-file FILE
                       that client's secret, on one line
  --roles ROLE,...     the local user's roles over --stdio (who may make which decisions)
  --wait-in-call SECONDS
                       how long one call waits for someone else's decision, or for durable steps
                       still running after the round budget, before it completes with a "waiting"
                       (or "working") result and the request id (default 20, at most 600)
  --task-poll SECONDS  the poll interval a task waiting on a person suggests to clients that follow
                       tasks (default 5; running steps and questions to the requester: a fifth of it)
  --notify-webhook URL POST JSON to URL for each notification; never delays a round. With a ledger:
                       decision.requested, decision.made, request.ended (a parked request ended:
                       completed, expired, withdrawn, terminated) and flow.notification (a flow's
                       notify(), e.g. a reminder), as Standard Webhooks from the ledger's outbox, at
                       least once; without one: each decision requested or made, best effort
  --notify-principals hash|id
                       how the webhook names requesters and deciders: keyed hashes (default) or ids
  --notify-secret whsec_...[,whsec_...]
                       sign webhooks (Standard Webhooks: webhook-id, webhook-timestamp,
                       webhook-signature); several during a rotation, newest first; with a ledger the
                       notifications go through its outbox (written with the round, delivered at
                       least once under a stable webhook-id)
  --notify-secrets-file FILE
                       the same, one secret per line (keeps secrets out of the process list)
  --event-secret NAME=whsec_...
                       accept POST /events/NAME signed with this Standard Webhooks secret (NAME "*":
                       every event); repeatable, several per name during a rotation; without one,
                       only a bearer token with the scope baton:events may send events
  --event-secrets-file FILE
                       the same, one NAME=whsec_... per line (keeps secrets out of the process list)
  --public-url URL     this server's external base (e.g. https://baton.example.com): every
                       decision.requested notification carries data.url = URL/decide/<id>, the
                       signed-in decision page (the link carries no secret); with --login-client-id,
                       the pages' origin: the sign-in returns to URL/auth/callback (default: the
                       served origin, loopback only); without the pages, a warning at start-up, and
                       the link answers a page that says how to decide here (tools, decision API)
  --otlp URL           export OpenTelemetry traces (OTLP/HTTP, JSON) to URL/v1/traces, e.g.
                       http://localhost:4318 (Jaeger, Tempo, a Collector): one trace per flow
                       instance (docs/observability.md); service.name baton unless OTEL_SERVICE_NAME;
                       and the figures of /metrics as OpenTelemetry metrics to URL/v1/metrics
  --no-scheduler       this instance fires no durable timers (by default every instance with a ledger
                       fires due timers of parked requests, polling every second)
  --store-principal-names
                       store readable principal ids in the ledger beside their keyed hashes
                       (requesters, deciders, audited callers); by default no table holds one
  --audit              record an audit entry per round on the ledger's database (needs --ledger)
  --inspect MODULE     a module whose default export is an XState inspector (an observer, a
                       function, or an object with "inspect", e.g. from @statelyai/inspect); every
                       flow instance reports as one run; sensitive values are redacted; over
                       --stdio, what it prints on stdout goes to stderr
  --allow-replays      without --ledger, serve flows with durable steps anyway: their steps run
                       inside the round and a retried or replayed round runs them AGAIN
  --round-budget MS    time budget of a round's invoked work (default 10000); durable steps still
                       running when it ends keep running and the call continues on a later round
  --config FILE        the config file (default: baton.config.ts, .mts, .js or .mjs in the working
                       folder, when there is one): export default defineConfig({ ... }) from
                       @baton/adapters, the flags' fields in camelCase (--max-ttl: maxTtl, the flows
                       module: flows); no inline secrets there, only their files
  --print-config       print the effective configuration as JSON on stdout, each value with its
                       source (flag, env BATON_..., file ..., default), secrets [redacted]; then exit

environment:
  BATON_<FLAG>         every flag, named after it (--max-ttl: BATON_MAX_TTL, the flows module:
                       BATON_FLOWS, --config: BATON_CONFIG; --event-secret: BATON_EVENT_SECRETS,
                       comma-separated); switches take true, false, 1 or 0. A flag wins over the
                       environment, which wins over the config file
  BATON_KEYS           comma-separated base64url secrets (>= 32 random bytes each; "baton keygen"
                       prints one); the first mints, all verify. Unset: a random per-process key,
                       refused on a ledger holding requests sealed under other keys

${runHint('serve')}
`;
}

/** The flags the command parses (derived from the configuration model); the README documents each. */
export const OPTIONS = SERVE_FLAGS;

/** Run `baton serve`; resolves with the exit code once the server has been stopped. */
export async function run(argv: string[]): Promise<number> {
  const gathered = await gatherSources(argv, USAGE);
  if (gathered.help) {
    process.stderr.write(help());
    return 0;
  }
  // Warnings (deprecations included) are printed once the start-up has succeeded.
  const warnings: string[] = [];
  const options = checkServeConfig(gathered, USAGE, (message) => void warnings.push(message));
  if (gathered.printConfig) {
    process.stdout.write(`${JSON.stringify(printedConfig(gathered), null, 2)}\n`);
    return 0;
  }
  return startServing(options, warnings);
}
