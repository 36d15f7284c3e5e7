/**
 * `@baton/engine`: MCP multi round-trip flows declared as XState v5 machines.
 *
 * Define inputs (`form`, `url`, `sampling`, `roots`), a machine whose states
 * `ask` for them, wrap both with `defineFlow`, and serve rounds with
 * `createRunner` and a `createRequestStateCodec`. Approvals by someone else:
 * `decision(...)` inputs and the runner's decision tools (inbox, decide,
 * requests, resume, withdraw). No transport, no database:
 * see `@baton/store` for ledgers and `@baton/adapters` for the MCP SDK.
 */

export { audio, embeddedResource, image, resourceLink, text } from './authoring/content.js';
export { eventLabel, toMermaid } from './authoring/diagram.js';
export { defineFlow, needsLedgerOnlyForSteps } from './authoring/flow.js';
export type {
  ArgumentCompleter,
  Flow,
  FlowAnnotations,
  FlowApp,
  FlowConfig,
  JsonSchemaObject,
  Migration,
  PersistedState,
} from './authoring/flowTypes.js';
export {
  type MachineGraph,
  type MachineGraphAsk,
  type MachineGraphDelay,
  type MachineGraphEdge,
  type MachineGraphEdgeKind,
  type MachineGraphNode,
  machineGraph,
  statesOfValue,
} from './authoring/graph.js';
export { type AnswerSizeOptions, DEFAULT_ANSWER_MAX_LENGTH } from './authoring/inputs/answerSize.js';
export { type AnswerOf, ask, defineInputs, type InputCatalog, type InputEvents } from './authoring/inputs/catalog.js';
export {
  type DecisionAnswer,
  type DecisionSpec,
  type DecisionVote,
  decision,
  isDecision,
  type MayDecideArgs,
  type QuorumTally,
  WITHDRAW_EVENT,
  type WithdrawEvent,
} from './authoring/inputs/decision.js';
export {
  DEFAULT_EVENT_LOOKBACK_SECONDS,
  type EventAnswer,
  type EventSpec,
  event,
  isEvent,
  MAX_EVENT_KEY_LENGTH,
} from './authoring/inputs/event.js';
export { form } from './authoring/inputs/form.js';
export { DEFAULT_MAX_ROOTS, roots } from './authoring/inputs/roots.js';
export { sampling } from './authoring/inputs/sampling.js';
export type {
  AnswerIssue,
  CommonOptions,
  FormAnswer,
  FromContext,
  InputEventType,
  InputSpec,
  ParsedAnswer,
  Root,
  RootsAnswer,
  SamplingAnswer,
  SamplingResult,
  SpecKind,
  UnsupportedAnswer,
  UrlAnswer,
} from './authoring/inputs/spec.js';
export { url } from './authoring/inputs/url.js';
export { NOTIFY_EVENT, type Notification, notify } from './authoring/notify.js';
export { PROGRESS_EVENT, type ProgressEvent, progress } from './authoring/progress.js';
export type { FlowServices, TokenService } from './authoring/services.js';
export {
  type StepContext,
  type StepFunction,
  type StepLogic,
  type StepOptions,
  type StepRetry,
  step,
} from './authoring/steps.js';
export {
  type CodecMode,
  createKeyRing,
  createRequestStateCodec,
  generateKey,
  type KeyPurpose,
  type KeyRing,
  type MintClaims,
  type MintOptions,
  parseKeyRingEnv,
  type RequestStateClaims,
  type RequestStateCodec,
  type RequestStateCodecOptions,
  type RingKey,
  type StateBinding,
} from './codec/index.js';
export type { AuditAnswer, AuditEntry, AuditInstance, AuditLog, AuditOutcome, AuditVia } from './contract/audit.js';
export type {
  CallContext,
  ClientInputCapabilities,
  FlowMethod,
  FlowProgress,
  RunnerLogEvent,
  RunRequest,
} from './contract/call.js';
export type {
  AudioContent,
  BlobResourceContents,
  ContentAnnotations,
  EmbeddedResource,
  ImageContent,
  ResourceContents,
  ResourceLink,
  TextContent,
  TextResourceContents,
} from './contract/content.js';
export type {
  BatchStats,
  ClaimDue,
  ClaimOutbox,
  ClaimStep,
  ClaimStepResult,
  DeciderRewrite,
  DecisionFilter,
  DecisionRecord,
  DecisionStatus,
  DelegationFilter,
  DelegationRecord,
  DueRequest,
  EventRecord,
  EventWait,
  EventWaiter,
  FullLedger,
  HandDecision,
  HandDecisionResult,
  HandOver,
  LatencySummary,
  Ledger,
  LedgerDecisions,
  LedgerEvents,
  LedgerFacet,
  LedgerHealth,
  LedgerOutbox,
  LedgerRedemptions,
  LedgerRequests,
  LedgerRuns,
  LedgerSchedule,
  LedgerStats,
  LedgerSteps,
  LegacyDecider,
  MintTokenRequest,
  NewDecision,
  NewDelegation,
  NewEvent,
  OutboxMessage,
  OutboxRecord,
  ParkedRequest,
  ParkRequest,
  ParkResult,
  RecordDecision,
  RecordDecisionResult,
  RecordEventResult,
  RecordStep,
  RecordStepResult,
  RecordVote,
  RecordVoteResult,
  RedeemRequest,
  RedeemResult,
  RedeemTokenResult,
  RemoveDelegation,
  RequestStatus,
  RunFilter,
  SchedulerStats,
  SettleOutbox,
  StepRecord,
  StepStatus,
  VoteRecord,
  WaitingFor,
} from './contract/ledger.js';
export type {
  CompleteOutcome,
  ContentBlock,
  ErrorOutcome,
  FlowResult,
  InputRequiredOutcome,
  RoundOutcome,
} from './contract/outcome.js';
export type {
  ElicitationProperty,
  ElicitationSchema,
  InputKind,
  RefusedAnswerMeta,
  SamplingMessage,
  SamplingParams,
  WireInputRequest,
} from './contract/wire.js';
export { DECIDE_TOOL } from './decisions/decide.js';
export { DELEGATE_TOOL } from './decisions/handOver.js';
export type { OutboxEventType } from './decisions/outbox.js';
export { RESUME_TOOL } from './decisions/requestTools.js';
export { type TaskSnapshot, type TaskStatus, taskOf } from './decisions/taskStatus.js';
export type { TaskCaller, TaskCancelResult, TaskTools } from './decisions/taskTools.js';
export type {
  AnswerDecisionRequest,
  AnswerDecisionResult,
  DecidedBy,
  DecidedEvent,
  DecideRequest,
  DecisionCaller,
  DecisionChannel,
  DecisionRefusal,
  DecisionRefusalReason,
  DecisionRequestedEvent,
  DecisionTools,
  DecisionView,
  DelegatedFor,
  DelegateRequest,
  DelegateResult,
  DescribeDecisionRequest,
  DescribeDecisionResult,
  InboxItem,
  QuorumStatus,
  QuorumVote,
  RequestItem,
  ResumeRequest,
  RunStatus,
  RunStatusRequest,
  RunStatusResult,
  RunStep,
  RunWait,
  WithdrawRequest,
} from './decisions/types.js';
export {
  FlowDefinitionError,
  FlowError,
  INVALID_REQUEST_STATE_MESSAGE,
  InvalidParamsError,
  InvalidRequestStateError,
  type InvalidStateReason,
  isInvalidRequestStateError,
  LEDGER_RETRY_AFTER_MS,
  LedgerFacetMissingError,
  LedgerUnavailableError,
  RoundInProgressError,
  StateTooLargeError,
  UnknownKeyError,
} from './errors.js';
export {
  EVENT_DEDUP_SECONDS,
  EVENT_PRINCIPAL,
  type SendEventRequest,
  type SendEventResult,
} from './events/send.js';
export { type InspectionObserver, type Inspector, inspectionSessionId, REDACTED } from './inspection/inspector.js';
export type {
  AbsenceResult,
  AbsenceView,
  OperatorRequest,
  OperatorTools,
  RemoveAbsenceRequest,
  RetryStepRequest,
  SetAbsenceRequest,
} from './operators/types.js';
export { DEADLINE_GRACE_SECONDS, DEFAULT_MAX_TTL_SECONDS, DEFAULT_TTL_SECONDS } from './round/lifetimes.js';
export { createRunner, type Runner, type RunnerOptions } from './runner/createRunner.js';
export { type FireOptions, type FireReport, SCHEDULER_PRINCIPAL } from './schedule/fire.js';
export { createScheduler, type Fireable, type Scheduler, type SchedulerOptions } from './schedule/scheduler.js';
