/**
 * `@baton/adapters`: Baton flows on the official MCP TypeScript SDK.
 * `registerFlows` puts a runner's flows on an `McpServer` as tools (and, per
 * flow, prompts and resources); `createFlowServerFactory` builds such servers
 * for the SDK's serving entries; `serveHttp` / `createFlowHttpHandler` serve
 * them over stateless Streamable HTTP with Host/Origin checks, a body limit
 * and bearer tokens (with roles): static ones, or an identity provider's through
 * `createOAuthVerifier` (an OAuth 2.1 resource server with Protected Resource
 * Metadata and scopes); `registerDecisionTools` adds the decision
 * tools (`baton_inbox`, `baton_decide`, ...) for flows that await decisions by
 * others; `createDecisionApi` serves them over plain HTTP (`/api/decisions`,
 * problem details on error); `createWebhookNotifier` tells deciders over HTTP;
 * `loadFlowsModule` reads what `baton serve` serves, and `defineConfig` types its
 * `baton.config.ts`.
 */
export { createStaticTokenVerifier, loadAuthTokens, type TokenEntry } from './auth/authTokens.js';
export {
  INTROSPECTION_CACHE_ENTRIES,
  INTROSPECTION_CACHE_SECONDS,
  type IntrospectionCredentials,
  IssuerUnavailableError,
  loadIntrospectionCredentials,
} from './auth/introspection.js';
export { BATON_SCOPES, DEFAULT_SCOPES_WITHOUT_CLAIM, oauthPrincipal } from './auth/oauthClaims.js';
export {
  ALLOWED_ALGORITHMS,
  createOAuthVerifier,
  DEFAULT_CLOCK_TOLERANCE_SECONDS,
  discoverOAuthIssuer,
  type IssuerMetadata,
  MAX_ACCESS_TOKEN_CHARS,
  type OAuthVerifier,
  type OAuthVerifierOptions,
} from './auth/oauthVerifier.js';
export { type BatonConfig, defineConfig } from './cli/serve/config.js';
export { DECIDE_PAGE_PATH, decisionPageUrl, parsePublicUrl } from './delivery/decisionLinks.js';
export {
  checkWebhookSecret,
  createOutboxDeliverer,
  type OutboxDeliverer,
  type OutboxDeliveryOptions,
  signedHeaders,
} from './delivery/outboxDelivery.js';
export {
  createWebhookNotifier,
  type WebhookEvent,
  type WebhookNotifier,
  type WebhookOptions,
} from './delivery/webhook.js';
export { type FlowsModule, loadFlowsModule } from './flowsModule.js';
export { createDecisionApi, DECISIONS_API_PATH, type DecisionApiOptions } from './http/decisionApi.js';
export { ANY_EVENT, createEventsRoute, EVENTS_PATH, type EventsRouteOptions } from './http/events.js';
export { fromRefusal, PROBLEM_CONTENT_TYPE, type Problem, problemResponse } from './http/problem.js';
export {
  type AuthenticatedRoute,
  createFlowHttpHandler,
  DEFAULT_MAX_BODY_BYTES,
  type FlowHttpHandler,
  type FlowHttpHandlerOptions,
  type HttpServing,
  ISSUER_RETRY_AFTER_SECONDS,
  type RouteAdmission,
  type ServedRoute,
  type ServeHttpOptions,
  serveHttp,
  servingWarning,
} from './http/serve.js';
export { type FlowGraph, flowGraph, type GraphAsk, type GraphEdge, type GraphNode } from './inspect/flowGraph.js';
export {
  type ArgsView,
  type DecisionView,
  type DescribeInput,
  describeInstance,
  type InstanceDetails,
  type InstanceState,
  type StartedBy,
  type StatusView,
  type TimesView,
} from './inspect/instanceView.js';
export { type GraphLayout, type LayoutBox, type LayoutEdge, type LayoutPoint, layoutGraph } from './inspect/layout.js';
export {
  createInspectHandler,
  type InspectHandler,
  type InspectHandlerOptions,
  type InspectServing,
  type InspectSignIn,
  type ServeInspectOptions,
  serveInspect,
} from './inspect/server.js';
export { ANONYMOUS_PRINCIPAL, defaultPrincipal, defaultRoles } from './mcp/callContext.js';
export {
  DECIDE_TOOL,
  type DecisionToolsOptions,
  INBOX_TOOL,
  REQUESTS_TOOL,
  RESUME_TOOL,
  registerDecisionTools,
  WITHDRAW_TOOL,
} from './mcp/decisionTools.js';
export {
  createDirectToolCalls,
  type DirectAnswer,
  type DirectCallHead,
  type DirectToolCall,
  type DirectToolCalls,
} from './mcp/directToolCalls.js';
export { type ProtectedResourceOptions, SUPPORTED_SCOPES } from './mcp/protectedResource.js';
export {
  FLOW_RESOURCE_PREFIX,
  type FlowExposure,
  type FlowResource,
  type RegisteredFlows,
  type RegisterFlowsOptions,
  registerFlows,
} from './mcp/registerFlows.js';
export { LEGACY_HTTP_MESSAGE } from './mcp/results.js';
export { createFlowServerFactory, type FlowServerOptions } from './mcp/serverFactory.js';
export {
  createTaskListen,
  MAX_LISTENED_TASKS,
  type TaskListenOptions,
  type TaskListenRoute,
} from './mcp/subscriptions/taskListen.js';
export { type RoundFailure, ServingMetrics, type ServingMetricsSnapshot } from './observability/metrics.js';
export {
  createObservabilityRoutes,
  DEFAULT_PING_CACHE_MS,
  DEFAULT_PING_TIMEOUT_MS,
  type LedgerSource,
  type ObservabilityOptions,
  type Route,
} from './observability/observability.js';
export {
  createWebLogin,
  type PendingLogin,
  type SignedIn,
  SignInError,
  type WebLogin,
  type WebLoginOptions,
} from './pages/webLogin.js';
