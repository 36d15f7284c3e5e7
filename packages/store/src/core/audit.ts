/**
 * What the audit-log drivers share: the row an entry becomes (JSON text for
 * state values, paths, asked keys and answers, so every driver round-trips
 * them byte for byte), the checks an entry must pass before it is written,
 * the options and defaults (retention, pruning schedule), what makes an
 * append a retry of one already kept (an entry whose round number another
 * call's round took is not one: the drivers number it after the instance's
 * last), and the rule that a failed append never reaches the caller's round: it is reported as one line
 * on stderr naming the flow, the round and the error's class, never a value.
 */
import type { AuditEntry, AuditInstance, AuditLog, AuditOutcome, AuditVia } from '@baton/engine';
import { sql } from 'drizzle-orm';
import { LedgerError } from './errors.js';
import { type PruneSchedule, startPruning } from './pruning.js';

/** An audit log kept by `@baton/store`: the engine's `AuditLog`, plus pruning and shutdown. */
export interface StoreAuditLog extends AuditLog {
  /** Delete every entry that started before `before` (ms since epoch); resolves with how many went. */
  prune(before: number): Promise<number>;
  /** Stop the pruning schedule and release the database (a pool you passed in stays open). */
  close(): Promise<void>;
}

/** Retention and error handling shared by every audit-log factory. */
export interface AuditLogOptions {
  /**
   * How long entries are kept, in ms: the schedule deletes entries whose round started
   * more than this long ago. Default 7 days.
   */
  readonly retentionMs?: number;
  /** How often the schedule prunes, in ms. Default 60 000; `0` disables it (call `prune` yourself). */
  readonly pruneIntervalMs?: number;
  /**
   * Called when an append fails (the round goes on regardless). Default: one line on
   * stderr with the flow, the round and the error's class and code, no values.
   */
  readonly onError?: (error: unknown, entry: AuditEntry) => void;
  /** Called when a scheduled prune fails. Default: a line on stderr. */
  readonly onPruneError?: (error: unknown) => void;
  /** The clock of the schedule (ms since epoch). Default `Date.now`. */
  readonly clock?: () => number;
}

/** Default retention of audit entries: 7 days. */
export const DEFAULT_AUDIT_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/** Default number of instances `instances()` lists. */
export const DEFAULT_AUDIT_INSTANCES_LIMIT = 100;

/** One entry as stored: the columns of `baton_audit` (a type alias, so it is a statement's parameter record). */
export type AuditRow = {
  fid: string;
  flow: string;
  hash: string;
  round: number;
  at: number;
  ms: number;
  principal: string;
  before: string | null;
  after: string | null;
  path: string;
  asked: string;
  received: string;
  outcome: string;
  message: string | null;
  args: string | null;
  principalName: string | null;
  expiresAt: number | null;
  via: string;
};

/** Named placeholders for every `AuditRow` column: the prepared insert of each driver binds a row to them. */
export const AUDIT_ROW_PLACEHOLDERS = {
  fid: sql.placeholder('fid'),
  flow: sql.placeholder('flow'),
  hash: sql.placeholder('hash'),
  round: sql.placeholder('round'),
  at: sql.placeholder('at'),
  ms: sql.placeholder('ms'),
  principal: sql.placeholder('principal'),
  before: sql.placeholder('before'),
  after: sql.placeholder('after'),
  path: sql.placeholder('path'),
  asked: sql.placeholder('asked'),
  received: sql.placeholder('received'),
  outcome: sql.placeholder('outcome'),
  message: sql.placeholder('message'),
  args: sql.placeholder('args'),
  principalName: sql.placeholder('principalName'),
  expiresAt: sql.placeholder('expiresAt'),
  via: sql.placeholder('via'),
} satisfies Record<keyof AuditRow, unknown>;

/** An instance summary as a driver reads it (aggregates may come back as strings or bigints). */
export interface AuditInstanceRow {
  fid: string;
  flow: string;
  rounds: unknown;
  firstAt: unknown;
  lastAt: unknown;
  lastOutcome: string;
}

const OUTCOMES: ReadonlySet<string> = new Set<AuditOutcome>(['complete', 'input_required', 'error']);

/**
 * What `via` may hold: a lower-case word (the engine's {@link AuditVia} values, and those later
 * versions add: the list is open, so a store accepts a word it does not know yet).
 */
const VIA = /^[a-z][a-z_]{0,31}$/;

/** An entry that cannot be stored (missing or mistyped field, or a value JSON cannot encode). */
export class AuditEntryError extends TypeError {
  override readonly name: string = 'AuditEntryError';
}

/** Check an entry and turn it into its row; throws an {@link AuditEntryError} (naming the field, never its value). */
export function toAuditRow(entry: AuditEntry): AuditRow {
  if (entry === null || typeof entry !== 'object') throw new AuditEntryError('an audit entry must be an object');
  const text = (field: 'fid' | 'flow' | 'hash' | 'principal', allowEmpty = true): string => {
    const value = entry[field];
    if (typeof value !== 'string' || (!allowEmpty && value === '')) {
      throw new AuditEntryError(`audit entry field "${field}" must be a ${allowEmpty ? '' : 'non-empty '}string`);
    }
    return value;
  };
  const time = (field: 'at' | 'ms'): number => {
    const value = entry[field];
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      throw new AuditEntryError(`audit entry field "${field}" must be a finite number`);
    }
    return Math.round(value);
  };
  const list = (field: 'path' | 'asked' | 'received'): string => {
    if (!Array.isArray(entry[field])) throw new AuditEntryError(`audit entry field "${field}" must be an array`);
    return json(entry[field], field);
  };
  if (!Number.isSafeInteger(entry.round) || entry.round < 0) {
    throw new AuditEntryError('audit entry field "round" must be an integer >= 0');
  }
  if (!OUTCOMES.has(entry.outcome)) {
    throw new AuditEntryError('audit entry field "outcome" must be complete, input_required or error');
  }
  if (entry.message !== undefined && typeof entry.message !== 'string') {
    throw new AuditEntryError('audit entry field "message" must be a string when present');
  }
  if (entry.principalName !== undefined && typeof entry.principalName !== 'string') {
    throw new AuditEntryError('audit entry field "principalName" must be a string when present');
  }
  // An entry of a caller that predates `via` (a JavaScript AuditLog user) is the requester's call.
  const via = entry.via ?? 'call';
  if (typeof via !== 'string' || !VIA.test(via)) {
    throw new AuditEntryError('audit entry field "via" must be a lower-case word (call, decide, resume, withdraw, …)');
  }
  if (entry.expiresAt !== undefined && (typeof entry.expiresAt !== 'number' || !Number.isFinite(entry.expiresAt))) {
    throw new AuditEntryError('audit entry field "expiresAt" must be a finite number when present');
  }
  return {
    fid: text('fid', false),
    flow: text('flow'),
    hash: text('hash'),
    round: entry.round,
    at: time('at'),
    ms: time('ms'),
    principal: text('principal'),
    before: entry.before === null || entry.before === undefined ? null : json(entry.before, 'before'),
    after: entry.after === null || entry.after === undefined ? null : json(entry.after, 'after'),
    path: list('path'),
    asked: list('asked'),
    received: list('received'),
    outcome: entry.outcome,
    message: entry.message ?? null,
    args: entry.args === undefined ? null : json(entry.args, 'args'),
    principalName: entry.principalName ?? null,
    expiresAt: entry.expiresAt === undefined ? null : Math.round(entry.expiresAt),
    via,
  };
}

/** The entry a stored row stands for. */
export function fromAuditRow(row: AuditRow): AuditEntry {
  return {
    fid: row.fid,
    flow: row.flow,
    hash: row.hash,
    round: Number(row.round),
    at: Number(row.at),
    ms: Number(row.ms),
    principal: row.principal,
    // Rows written before schema 6 have the column's default: the requester's own call.
    via: (row.via ?? 'call') as AuditVia,
    before: row.before === null ? null : JSON.parse(row.before),
    after: row.after === null ? null : JSON.parse(row.after),
    path: JSON.parse(row.path),
    asked: JSON.parse(row.asked),
    received: JSON.parse(row.received),
    outcome: row.outcome as AuditOutcome,
    ...(row.message === null ? {} : { message: row.message }),
    ...(row.args === null || row.args === undefined ? {} : { args: JSON.parse(row.args) }),
    ...(row.principalName === null || row.principalName === undefined ? {} : { principalName: row.principalName }),
    ...(row.expiresAt === null || row.expiresAt === undefined ? {} : { expiresAt: Number(row.expiresAt) }),
  };
}

/**
 * Whether `kept` is the entry `row` retries (the same round appended again): the same instance,
 * start, principal and call. Two different rounds of one instance never share all four.
 */
export function isRetriedAppend(row: AuditRow, kept: Pick<AuditRow, 'fid' | 'at' | 'principal' | 'via'>): boolean {
  return row.fid === kept.fid && row.at === Number(kept.at) && row.principal === kept.principal && row.via === kept.via;
}

/** How many times an append is renumbered after the instance's last entry before it is reported as failed. */
export const AUDIT_RENUMBER_ATTEMPTS = 8;

/** An instance summary with its numbers as numbers. */
export function toAuditInstance(row: AuditInstanceRow): AuditInstance {
  return {
    fid: row.fid,
    flow: row.flow,
    rounds: Number(row.rounds),
    firstAt: Number(row.firstAt),
    lastAt: Number(row.lastAt),
    lastOutcome: row.lastOutcome as AuditOutcome,
  };
}

/** `instances()` options with the default limit applied and checked. */
export function instancesQuery(options: { flow?: string; limit?: number } | undefined): {
  flow: string | undefined;
  limit: number;
} {
  const limit = options?.limit ?? DEFAULT_AUDIT_INSTANCES_LIMIT;
  if (!Number.isSafeInteger(limit) || limit < 0) throw new RangeError(`limit must be an integer >= 0, got ${limit}`);
  const flow = options?.flow;
  if (flow !== undefined && typeof flow !== 'string') throw new TypeError('flow must be a string');
  return { flow, limit };
}

/**
 * Report a failed append without rethrowing. The default line names the flow,
 * the round and the error's class and code: never the entry's values, which
 * may hold user data, nor the error's message, which may quote them.
 */
export function reportAppendFailure(error: unknown, entry: AuditEntry, options: AuditLogOptions): void {
  try {
    if (options.onError) {
      options.onError(error, entry);
      return;
    }
    const flow = typeof entry?.flow === 'string' ? JSON.stringify(entry.flow.slice(0, 200)) : '(unknown flow)';
    const round = Number.isSafeInteger(entry?.round) ? String(entry.round) : '?';
    console.error(`[baton/store] audit: could not record round ${round} of flow ${flow}: ${errorKind(error)}`);
  } catch {
    // A failing reporter must not break the round either.
  }
}

/** Start the retention schedule of an audit log (nothing when `pruneIntervalMs` is 0). */
export function startAuditPruning(prune: (before: number) => Promise<number>, options: AuditLogOptions): PruneSchedule {
  const retentionMs = options.retentionMs ?? DEFAULT_AUDIT_RETENTION_MS;
  if (!Number.isFinite(retentionMs) || retentionMs < 0) {
    throw new RangeError(`retentionMs must be a finite number >= 0, got ${retentionMs}`);
  }
  return startPruning(prune, {
    pruneIntervalMs: options.pruneIntervalMs,
    pruneGraceMs: retentionMs,
    clock: options.clock,
    onPruneError:
      options.onPruneError ??
      ((error: unknown) => console.error(`[baton/store] scheduled audit prune failed: ${errorKind(error)}`)),
  });
}

function json(value: unknown, field: string): string {
  let encoded: string | undefined;
  try {
    encoded = JSON.stringify(value);
  } catch {
    throw new AuditEntryError(`audit entry field "${field}" cannot be encoded as JSON`);
  }
  if (encoded === undefined) throw new AuditEntryError(`audit entry field "${field}" cannot be encoded as JSON`);
  return encoded;
}

/** `Name` or `Name CODE`, without the message. */
function errorKind(error: unknown): string {
  // Our own errors name fields and places, never values.
  if (error instanceof AuditEntryError || error instanceof LedgerError) return `${error.name}: ${error.message}`;
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' || typeof code === 'number' ? `${error.name} ${code}` : error.name;
  }
  return typeof error;
}
