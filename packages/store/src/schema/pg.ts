/**
 * The ledger's tables for PostgreSQL, as drizzle schema. Same logical tables
 * as `sqlite.ts`: `baton_redemptions`, `baton_tokens`, `baton_meta`,
 * `baton_audit`, `baton_requests`, `baton_decisions` and `baton_steps`. Times are `bigint` milliseconds since the epoch (read back as
 * JavaScript numbers), taken from the engine's clock so that every instance
 * agrees with the envelope's own expiry. Tables are created unqualified, in the connection's
 * `search_path` (normally `public`). This file is read by drizzle-kit: it
 * imports nothing but drizzle-orm.
 */
import { sql } from 'drizzle-orm';
import { bigint, index, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';

/** Redeemed requestState ids: at most one row per jti, ever (until pruned after expiry). */
export const redemptions = pgTable(
  'baton_redemptions',
  {
    /** The envelope's random 96-bit id (base64url). */
    jti: text('jti').primaryKey(),
    /** Digest of the redeeming round's `inputResponses`; a retry must match it byte for byte. */
    responsesDigest: text('responses_digest').notNull(),
    /** The round's outcome, sealed by the engine; null until recorded (or if the round crashed). */
    outcome: text('outcome'),
    /** When the envelope expires (ms); the row may be pruned after it. */
    expiresAt: bigint('expires_at', { mode: 'number' }).notNull(),
    /** When the jti was redeemed (ms, engine clock). */
    redeemedAt: bigint('redeemed_at', { mode: 'number' }).notNull(),
  },
  (table) => [index('baton_redemptions_expires_at_idx').on(table.expiresAt)],
);

/** Single-use tokens minted by flows (approval links, access codes). */
export const tokens = pgTable(
  'baton_tokens',
  {
    /** sha256 of the code (base64url): the code itself is never stored. */
    codeHash: text('code_hash').primaryKey(),
    /** What the token is for; redemption must name the same purpose. */
    purpose: text('purpose').notNull(),
    /** Optional opaque data handed back on redemption. */
    data: text('data'),
    /** When the token stops being redeemable (ms). */
    expiresAt: bigint('expires_at', { mode: 'number' }).notNull(),
    /** When it was redeemed (ms), or null while unused. */
    usedAt: bigint('used_at', { mode: 'number' }),
    /** When it was minted (ms). */
    createdAt: bigint('created_at', { mode: 'number' }).notNull(),
  },
  (table) => [index('baton_tokens_expires_at_idx').on(table.expiresAt)],
);

/** Key/value facts about the ledger database itself (`schema_version`). */
export const meta = pgTable('baton_meta', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
});

/**
 * The audit trail: one row per round of a flow instance (`fid`), appended by the
 * runner when an audit log is configured, whoever's call ran the round (`via`). State values, paths, asked keys and
 * received answers are JSON text (kept byte for byte, unlike `jsonb`); answer
 * values appear only for flows that opt in. `principal` is a keyed hash, never
 * the raw id. Pruned by `at` (retention).
 */
export const audit = pgTable(
  'baton_audit',
  {
    /** Flow-instance id, the same for every round of one run. */
    fid: text('fid').notNull(),
    /** Flow name. */
    flow: text('flow').notNull(),
    /** The flow's definition hash when the round ran. */
    hash: text('hash').notNull(),
    /** Round number, 1 for the first request of the run. */
    round: integer('round').notNull(),
    /** When the round started (ms since epoch, engine clock). */
    at: bigint('at', { mode: 'number' }).notNull(),
    /** How long the round took (ms). */
    ms: bigint('ms', { mode: 'number' }).notNull(),
    /** Keyed hash of the principal (base64url). */
    principal: text('principal').notNull(),
    /** State value at the start of the round (JSON), null on the first round. */
    before: text('before'),
    /** State value at the end of the round (JSON). */
    after: text('after'),
    /** Every state value passed through in the round (JSON array). */
    path: text('path').notNull(),
    /** Keys asked by the round's result (JSON array). */
    asked: text('asked').notNull(),
    /** Answers received: key, action and (opt-in) value (JSON array). */
    received: text('received').notNull(),
    /** `complete`, `input_required` or `error`. */
    outcome: text('outcome').notNull(),
    /** The error message of an `error` outcome. */
    message: text('message'),
    /** The run's arguments (JSON), first round only, only for flows with `auditValues` (schema 5). */
    args: text('args'),
    /** The caller's readable principal id, only when the runner stores requester names (schema 5). */
    principalName: text('principal_name'),
    /** When the requestState handed out by an `input_required` round expires (ms; schema 5). */
    expiresAt: bigint('expires_at', { mode: 'number' }),
    /**
     * Whose call ran the round (schema 6): `call` (the requester's own tool call), `decide`,
     * `resume` or `withdraw`; rows written before schema 6 read as `call`.
     */
    via: text('via').notNull().default('call'),
  },
  (table) => [
    primaryKey({ name: 'baton_audit_pk', columns: [table.fid, table.round] }),
    index('baton_audit_at_idx').on(table.at),
    index('baton_audit_flow_at_idx').on(table.flow, table.at),
  ],
);

/**
 * Flow instances parked while they wait on someone other than their caller (a decision by
 * another person): one row per request id (the flow instance's `fid`), rewritten as the flow
 * moves on. `version` is the compare-and-set token: every write is conditional on the version
 * the writer read, and bumps it. `requester` is a keyed hash of the principal; the readable
 * `requester_name` is stored only when the operator opts in. `state` is the flow's latest
 * state, sealed by the engine (opaque here).
 */
export const requests = pgTable(
  'baton_requests',
  {
    /** The request id: the flow instance's id. */
    id: text('id').primaryKey(),
    /** The flow's name. */
    flow: text('flow').notNull(),
    /** Keyed hash of the requester's principal (base64url), never the principal itself. */
    requester: text('requester').notNull(),
    /** The requester's readable principal, only when the operator opts in; else null. */
    requesterName: text('requester_name'),
    /** `waiting`, `completed`, `expired` or `withdrawn`. */
    status: text('status').notNull(),
    /** What it waits for, as JSON text: `[{ key, role? }]` (empty unless waiting). */
    waitingFor: text('waiting_for').notNull(),
    /** The flow's latest state, sealed by the engine. */
    state: text('state').notNull(),
    /** 1 when created, +1 on every write. */
    version: integer('version').notNull(),
    /** When it was first parked (ms, engine clock). */
    createdAt: bigint('created_at', { mode: 'number' }).notNull(),
    /** When it was last written (ms, engine clock). */
    updatedAt: bigint('updated_at', { mode: 'number' }).notNull(),
    /** When the row (and its decisions) may be pruned (ms). */
    expiresAt: bigint('expires_at', { mode: 'number' }).notNull(),
    /** When its earliest durable timer is due (ms), while waiting; null: none (schema 8). */
    dueAt: bigint('due_at', { mode: 'number' }),
    /** The scheduler instance firing its timer now (an opaque runner id), or null (schema 8). */
    leaseOwner: text('lease_owner'),
    /** Until when that claim runs (ms); past it another instance may fire the timer (schema 8). */
    leaseUntil: bigint('lease_until', { mode: 'number' }),
  },
  (table) => [
    index('baton_requests_requester_updated_at_idx').on(table.requester, table.updatedAt),
    index('baton_requests_expires_at_idx').on(table.expiresAt),
    index('baton_requests_due_at_idx').on(table.dueAt),
    // `baton runs list` pages newest write first, then by id in code-point order (keyset on both).
    index('baton_requests_updated_at_id_idx').on(table.updatedAt.desc().nullsFirst(), sql`${table.id} collate "C"`),
  ],
);

/**
 * Decisions requested of someone other than the requester: one row per (request id, key),
 * `pending` until recorded once (`decided`, with the decider, the content and the time) or
 * closed with its request. `role` null means only the flow's predicate says who may decide.
 * `decider` is a keyed hash of the principal, like `requester`; the readable `decider_name` is
 * stored only when the operator opts in. `content` is stored as the engine hands it (sealed,
 * opaque here). Pruned with their request.
 */
export const decisions = pgTable(
  'baton_decisions',
  {
    /** The request id (the flow instance's id). */
    id: text('id').notNull(),
    /** The decision's key in the flow (e.g. `manager_approval`). */
    key: text('key').notNull(),
    /** The flow's name. */
    flow: text('flow').notNull(),
    /** The role that may decide, or null. */
    role: text('role'),
    /** The rendered message shown to the decider. */
    message: text('message').notNull(),
    /** The answer's elicitation form schema (JSON text). */
    schema: text('schema').notNull(),
    /** Keyed hash of the requester's principal (four eyes: it never decides). */
    requester: text('requester').notNull(),
    /** When it was requested (ms, engine clock). */
    requestedAt: bigint('requested_at', { mode: 'number' }).notNull(),
    /** After it (ms) the decision can no longer be made; null: no deadline. */
    deadline: bigint('deadline', { mode: 'number' }),
    /** `pending`, `decided` or `closed`. */
    status: text('status').notNull(),
    /**
     * Keyed hash of the decider's principal (base64url), once decided; never the principal itself
     * (schema 6; a row decided before it has null here until the engine rewrites it).
     */
    decider: text('decider'),
    /** The decider's readable principal, only when the operator opts in; else null (schema 6). */
    deciderName: text('decider_name'),
    /** The decision's content as the engine stored it, once decided. */
    content: text('content'),
    /** When it was decided (ms). */
    decidedAt: bigint('decided_at', { mode: 'number' }),
    /** The decider's display name, only when the operator opts in to storing names (schema 11). */
    deciderDisplay: text('decider_display'),
    /** The channel the decision came through: `decide`, `decide_page`, `decide_api` (schema 11). */
    via: text('via'),
    /** Keyed hash of the principal the decision was handed to; null: not handed over (schema 12). */
    assignee: text('assignee'),
    /** The latest hand-over (JSON: to, by, onBehalfOf with names when stored, the sealed authority, reason, at), schema 12. */
    handover: text('handover'),
    /** Keyed hash of the principal it was decided for (a delegation); null: in the decider's own right (schema 12). */
    onBehalfOf: text('on_behalf_of'),
    /** That principal's readable id, only when names are stored (schema 12). */
    onBehalfOfName: text('on_behalf_of_name'),
  },
  (table) => [
    primaryKey({ name: 'baton_decisions_pk', columns: [table.id, table.key] }),
    index('baton_decisions_status_role_idx').on(table.status, table.role),
    index('baton_decisions_assignee_idx').on(table.assignee),
  ],
);

/**
 * Votes on quorum decisions (schema 11): one row per (request id, key, voter), written in one
 * transaction with the bump of its request's version (the vote that completes the decision also
 * decides it there). `voter` is a keyed hash like `decider`; `voter_name` and `display_name` are
 * stored only when the operator opts in. `content` is sealed by the engine. Pruned with their request.
 */
export const decisionVotes = pgTable(
  'baton_decision_votes',
  {
    /** The request id. */
    id: text('id').notNull(),
    /** The decision's key. */
    key: text('key').notNull(),
    /** Keyed hash of the voter's principal. */
    voter: text('voter').notNull(),
    /** The voter's readable principal, only when names are stored. */
    voterName: text('voter_name'),
    /** The voter's display name, only when names are stored. */
    displayName: text('display_name'),
    /** The vote's content and voter, sealed by the engine. */
    content: text('content').notNull(),
    /** When the vote was recorded (ms). */
    decidedAt: bigint('decided_at', { mode: 'number' }).notNull(),
    /** The channel: `decide`, `decide_page`, `decide_api`. */
    via: text('via').notNull(),
    /** The request's version this vote's write made: orders the votes of a request. */
    version: integer('version').notNull(),
  },
  (table) => [primaryKey({ name: 'baton_decision_votes_pk', columns: [table.id, table.key, table.voter] })],
);

/**
 * Absence delegates (schema 12): while `principal` is away (`starts_at` to `ends_at`),
 * `delegate` decides for them with `roles` (JSON array). Principals are keyed hashes, names only
 * when stored; `authority` is the principal and roles sealed by the engine. Set and removed by
 * operators; a removal marks the row (`removed_*`), which stays as the record.
 */
export const delegations = pgTable(
  'baton_delegations',
  {
    id: text('id').primaryKey(),
    principal: text('principal').notNull(),
    principalName: text('principal_name'),
    delegate: text('delegate').notNull(),
    delegateName: text('delegate_name'),
    roles: text('roles').notNull(),
    authority: text('authority').notNull(),
    startsAt: bigint('starts_at', { mode: 'number' }).notNull(),
    endsAt: bigint('ends_at', { mode: 'number' }).notNull(),
    reason: text('reason').notNull(),
    setBy: text('set_by').notNull(),
    setByName: text('set_by_name'),
    createdAt: bigint('created_at', { mode: 'number' }).notNull(),
    removedAt: bigint('removed_at', { mode: 'number' }),
    removedReason: text('removed_reason'),
    removedBy: text('removed_by'),
    removedByName: text('removed_by_name'),
  },
  (table) => [index('baton_delegations_delegate_idx').on(table.delegate, table.endsAt)],
);

/**
 * Durable steps of flow instances: one row per (flow instance id, step key), claimed under a
 * lease (`owner`, `lease_until`: another instance may take the step over once the lease ended),
 * `running` until its result or final error is recorded once (`succeeded` / `failed`, with
 * `outcome` sealed by the engine, opaque here). `claims` counts owners (takeovers after a lost
 * instance). Pruned by `expires_at`.
 */
export const steps = pgTable(
  'baton_steps',
  {
    /** The flow instance's id. */
    id: text('id').notNull(),
    /** The step's id and invocation (`<step id>#<n>`). */
    key: text('key').notNull(),
    /** `running`, `succeeded` or `failed`. */
    status: text('status').notNull(),
    /** Who holds (or last held) the lease: an opaque runner id. */
    owner: text('owner').notNull(),
    /** Until when the lease runs (ms, engine clock). */
    leaseUntil: bigint('lease_until', { mode: 'number' }).notNull(),
    /** How many owners claimed it (1, +1 per takeover). */
    claims: integer('claims').notNull(),
    /** The sealed result or error, once recorded. */
    outcome: text('outcome'),
    /** When the outcome was recorded (ms). */
    recordedAt: bigint('recorded_at', { mode: 'number' }),
    /** When the row may be pruned (ms). */
    expiresAt: bigint('expires_at', { mode: 'number' }).notNull(),
  },
  (table) => [
    primaryKey({ name: 'baton_steps_pk', columns: [table.id, table.key] }),
    index('baton_steps_expires_at_idx').on(table.expiresAt),
  ],
);

/**
 * The outbox (schema 8): notifications written in the same transaction as the round that raised
 * them, then delivered (signed webhooks) with retries, at least once, under their stable `id`.
 * `next_attempt_at` doubles as the delivery lease: a deliverer claims a row by moving it into
 * the future. Pruned by `expires_at`.
 */
export const outbox = pgTable(
  'baton_outbox',
  {
    /** Stable id (the `webhook-id` of every delivery attempt). */
    id: text('id').primaryKey(),
    /** The event type (`decision.requested`, `request.ended`, `flow.notification`, …). */
    type: text('type').notNull(),
    /** The body to deliver (JSON text: `{ type, timestamp, data }`). */
    body: text('body').notNull(),
    /** Delivery attempts so far. */
    attempts: integer('attempts').notNull(),
    /** When it may be tried (again) (ms); a claim moves it into the future. */
    nextAttemptAt: bigint('next_attempt_at', { mode: 'number' }).notNull(),
    /** When it was delivered (ms), or null while not yet. */
    deliveredAt: bigint('delivered_at', { mode: 'number' }),
    /** When it was written (ms). */
    createdAt: bigint('created_at', { mode: 'number' }).notNull(),
    /** When the row may be pruned (ms). */
    expiresAt: bigint('expires_at', { mode: 'number' }).notNull(),
    /**
     * The W3C `traceparent` of the round that raised it (schema 13), so its delivery attempts
     * join the flow instance's trace; null without tracing.
     */
    traceContext: text('trace_context'),
  },
  (table) => [
    index('baton_outbox_next_attempt_at_idx').on(table.deliveredAt, table.nextAttemptAt),
    index('baton_outbox_expires_at_idx').on(table.expiresAt),
  ],
);

/**
 * Event waits (schema 9): one row per (parked request, event name, correlation key) while the
 * request waits for that event, replaced in the same transaction as every write of the request
 * (none once it stops waiting, so a request whose wait timed out is never found here). Indexed
 * by (event, match_key): routing an event reads the waiters it reaches, not every parked row.
 */
export const eventWaits = pgTable(
  'baton_event_waits',
  {
    /** The parked request's id. */
    id: text('id').notNull(),
    /** The event's name (`ci.finished`). */
    event: text('event').notNull(),
    /** The correlation key the request waits for ('' when the event has none). */
    matchKey: text('match_key').notNull(),
    /** The request's flow. */
    flow: text('flow').notNull(),
  },
  (table) => [
    primaryKey({ name: 'baton_event_waits_pk', columns: [table.id, table.event, table.matchKey] }),
    index('baton_event_waits_event_match_idx').on(table.event, table.matchKey),
  ],
);

/**
 * Received events (schema 9): one row per (event name, event id), kept for de-duplication of
 * retried sends and for the lookback window (an event that arrived before its instance waits is
 * delivered when the wait begins). `data` is sealed by the engine (opaque here); `delivered` is
 * how many waiting instances the first delivery reached, null while it runs. Pruned by `expires_at`.
 */
export const events = pgTable(
  'baton_events',
  {
    /** The event's name. */
    event: text('event').notNull(),
    /** The event's id (the sender's, or a random one). */
    id: text('id').notNull(),
    /** Its correlation key ('' when the event has none). */
    matchKey: text('match_key').notNull(),
    /** The event's data, sealed by the engine. */
    data: text('data').notNull(),
    /** When it was received (ms, engine clock). */
    receivedAt: bigint('received_at', { mode: 'number' }).notNull(),
    /** Until when a wait that begins receives it (ms): the lookback window. */
    lookbackUntil: bigint('lookback_until', { mode: 'number' }).notNull(),
    /** Instances the first delivery reached; null while it runs. */
    delivered: integer('delivered'),
    /** When the row may be pruned (ms): the end of the de-duplication window. */
    expiresAt: bigint('expires_at', { mode: 'number' }).notNull(),
  },
  (table) => [
    primaryKey({ name: 'baton_events_pk', columns: [table.event, table.id] }),
    index('baton_events_event_match_idx').on(table.event, table.matchKey, table.receivedAt),
    index('baton_events_expires_at_idx').on(table.expiresAt),
  ],
);
