/**
 * The memory ledger's shared handle: every Map the facets read and write
 * (redemptions, tokens, parked requests, decisions, votes, delegations,
 * steps, schedulers' leases, the outbox, event waits and received events),
 * the two writes more than one facet makes (a request's event waits, outbox
 * rows), the closed flag and `ordinal`, the string order every listing
 * sorts by. Each facet module (`redemptions.ts`, `requests.ts`, ...) builds
 * its facet from one `MemoryState`; `index.ts` creates it.
 *
 * ```ts
 * const state = createMemoryState();
 * state.requests.get('req-1'); // ParkedRequest | undefined
 * state.assertOpen(); // throws LedgerError once state.closed is set
 * ```
 */
import type {
  DecisionRecord,
  DelegationRecord,
  EventRecord,
  OutboxMessage,
  OutboxRecord,
  ParkedRequest,
  StepRecord,
  VoteRecord,
} from '@baton/engine';
import { LedgerError } from '../core/errors.js';
import { OUTBOX_RETENTION_MS } from '../core/outbox.js';
import type { RedemptionRow, TokenRow } from '../core/results.js';

export interface MemoryRedemption extends RedemptionRow {
  outcome: string | null;
}

export interface MemoryOutbox extends OutboxRecord {
  nextAttemptAt: number;
  deliveredAt: number | null;
  readonly expiresAt: number;
  attempts: number;
}

export interface MemoryToken extends TokenRow {
  usedAt: number | null;
  readonly data: string | null;
}

/** A received event as the memory ledger keeps it. */
export type MemoryEvent = EventRecord & { delivered: number | null; lookbackUntil: number; expiresAt: number };

/** Everything the memory ledger's facets share (see the module comment). */
export interface MemoryState {
  readonly redemptions: Map<string, MemoryRedemption>;
  readonly tokens: Map<string, MemoryToken>;
  readonly requests: Map<string, ParkedRequest>;
  /** Decisions by `${id}\u0000${key}` ({@link decisionKey}). */
  readonly decisions: Map<string, DecisionRecord>;
  /** Absence delegates by id (schema 12). */
  readonly delegations: Map<string, DelegationRecord>;
  /** Quorum votes by request id, oldest first. */
  readonly votes: Map<string, VoteRecord[]>;
  /** Durable steps by `${id}\u0000${key}`. */
  readonly steps: Map<string, StepRecord>;
  /** Schedulers' claims on parked requests' timers, by request id. */
  readonly leases: Map<string, { owner: string; until: number }>;
  readonly outbox: Map<string, MemoryOutbox>;
  /** Event waits: `${event}\u0000${match}` -> request id -> flow; and each request's keys, to replace them. */
  readonly waits: Map<string, Map<string, string>>;
  readonly waitsOf: Map<string, string[]>;
  /** Received events by `${event}\u0000${id}`. */
  readonly received: Map<string, MemoryEvent>;
  closed: boolean;
  /** Replace a request's event waits (an empty list removes them). */
  setWaits(id: string, flow: string, list: readonly { event: string; match: string }[]): void;
  /** Insert notifications (an id that exists is left as it is). */
  insertOutbox(messages: readonly OutboxMessage[], now: number): void;
  /** Throws once the ledger is closed. */
  assertOpen(): void;
}

/** The key of a decision (or a step) in its Map. */
export const decisionKey = (id: string, key: string) => `${id}\u0000${key}`;

/** A fresh, empty, open state. */
export function createMemoryState(): MemoryState {
  const waits = new Map<string, Map<string, string>>();
  const waitsOf = new Map<string, string[]>();
  const outbox = new Map<string, MemoryOutbox>();
  const state: MemoryState = {
    redemptions: new Map(),
    tokens: new Map(),
    requests: new Map(),
    decisions: new Map(),
    delegations: new Map(),
    votes: new Map(),
    steps: new Map(),
    leases: new Map(),
    outbox,
    waits,
    waitsOf,
    received: new Map(),
    closed: false,
    setWaits(id, flow, list) {
      for (const at of waitsOf.get(id) ?? []) {
        const ids = waits.get(at);
        ids?.delete(id);
        if (ids?.size === 0) waits.delete(at);
      }
      waitsOf.delete(id);
      if (list.length === 0) return;
      const keys = [...new Set(list.map((w) => `${w.event}\u0000${w.match}`))];
      for (const at of keys) {
        const ids = waits.get(at) ?? new Map<string, string>();
        waits.set(at, ids);
        ids.set(id, flow);
      }
      waitsOf.set(id, keys);
    },
    insertOutbox(messages, now) {
      for (const m of messages) {
        if (outbox.has(m.id)) continue;
        outbox.set(m.id, {
          id: m.id,
          type: m.type,
          body: m.body,
          ...(m.traceparent ? { traceparent: m.traceparent } : {}),
          attempts: 0,
          createdAt: now,
          nextAttemptAt: now,
          deliveredAt: null,
          expiresAt: now + OUTBOX_RETENTION_MS,
        });
      }
    },
    assertOpen() {
      if (state.closed) throw new LedgerError('The memory ledger is closed');
    },
  };
  return state;
}

/**
 * Plain string order (UTF-16 code units), which is how SQLite's BINARY collation and
 * PostgreSQL's `COLLATE "C"` sort text (byte order) for every character short of the astral
 * planes; `localeCompare` would not match them. Ties in the listings break the same way in
 * every ledger.
 */
export function ordinal(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
