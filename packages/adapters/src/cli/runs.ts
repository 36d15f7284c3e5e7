/**
 * `baton runs list|show|cancel|terminate|retry-step`: what an operator reads about flow
 * runs, and does to them (`runsActions.ts`), straight
 * from the ledger (`--ledger URL`, the database `baton serve --ledger` and
 * `--audit` write). `list` finds parked runs by flow, status (as
 * `baton_requests` shows it), requester (keyed hash, or stored name) and
 * age, newest write first, as a table or as JSON with a cursor for the next
 * page. `show <id>` prints one run: where it stands, what it waits for, its
 * decisions, its durable steps and its audit timeline; further sections
 * (timers, notifications) join {@link SHOW_SECTIONS}. Nothing here needs the
 * keys: sealed states, answers and step results are never opened, and
 * principals appear as the ledger stores them (hashes, names only where
 * `--store-principal-names` stored them).
 */
import type {
  AuditEntry,
  DecisionRecord,
  FullLedger,
  ParkedRequest,
  RequestStatus,
  StepRecord,
  VoteRecord,
} from '@baton/engine';
import { openAuditLog, openLedger } from '@baton/store';
import { CliError, oneLine, usageError } from './cliError.js';
import { requireExistingLedger } from './existingLedger.js';
import { parseFlags } from './parseFlags.js';
import { act, CANCEL_USAGE, RETRY_STEP_USAGE, TERMINATE_USAGE } from './runsActions.js';

/** The command's synopsis, as `--help`, usage errors and the README show it. */
export const USAGE =
  'baton runs (list | show <id> | cancel <id> <flows-module> | terminate <id> | retry-step <id> <step>) --ledger URL [--flow NAME] [--status S] [--requester HASH|NAME] [--since DURATION|ISO] [--started-since DURATION|ISO] [--limit N] [--cursor C] [--json] [--reason TEXT] [--as NAME] [--store-principal-names]';

const LIST_USAGE =
  'baton runs list --ledger URL [--flow NAME] [--status S] [--requester HASH|NAME] [--since DURATION|ISO] [--started-since DURATION|ISO] [--limit N] [--cursor C] [--json]';
const SHOW_USAGE = 'baton runs show <id> --ledger URL [--json]';
/** Each subcommand's synopsis. */
const USAGES = {
  list: LIST_USAGE,
  show: SHOW_USAGE,
  cancel: CANCEL_USAGE,
  terminate: TERMINATE_USAGE,
  'retry-step': RETRY_STEP_USAGE,
} as const;
/** Each subcommand's positional arguments: how many. */
const ARITY: Record<keyof typeof USAGES, number> = { list: 0, show: 1, cancel: 2, terminate: 1, 'retry-step': 2 };

const HELP = `usage: ${USAGE}

Operate flow runs parked in a ledger.

  ${LIST_USAGE}
      runs newest write first; --since and --started-since take 30m, 2h, 7d or an ISO time;
      --status is waiting, completed, expired, withdrawn or terminated; --json prints { runs, cursor },
      and --cursor C continues after the last run of a page (default --limit 50, at most 1000)
  ${SHOW_USAGE}
      one run: status, what it waits for, decisions, durable steps, audit timeline
  ${CANCEL_USAGE}
      deliver the flow's withdrawal (refused when it has none where the run stands)
  ${TERMINATE_USAGE}
      end a waiting run whatever its flow says (status terminated)
  ${RETRY_STEP_USAGE}
      run a durable step again after its retries ran out (same idempotency key); the run must be
      waiting on it, and a server's scheduler runs it within about a second
      All three need BATON_KEYS; the operator (--as, else the login name) and the reason are
      recorded in the audit trail. Of two racing writes one wins; the other says what won.
`;

/** The flags the command parses (node:util `parseArgs` options); the README documents each. */
export const OPTIONS = {
  ledger: { type: 'string' },
  flow: { type: 'string' },
  status: { type: 'string' },
  requester: { type: 'string' },
  since: { type: 'string' },
  'started-since': { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
  json: { type: 'boolean' },
  reason: { type: 'string' },
  as: { type: 'string' },
  'store-principal-names': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

const STATUSES: readonly RequestStatus[] = ['waiting', 'completed', 'expired', 'withdrawn', 'terminated'];
const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 1000;
const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

type Values = ReturnType<typeof parseFlags<typeof OPTIONS>>['values'];

/** `30m`, `2h`, `7d` (before now) or an ISO 8601 time, as ms since epoch. */
export function parseSince(flag: string, value: string, now: number): number {
  const duration = /^(\d+)([smhdw])$/.exec(value);
  if (duration) return now - Number(duration[1]) * UNITS[duration[2]!]!;
  const at = /^\d{4}-\d{2}-\d{2}/.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(at)) throw usageError(`--${flag} expects a duration (30m, 2h, 7d) or an ISO time, got "${value}"`);
  return at;
}

/** The keyset cursor of a page's last run (opaque to the user: base64url JSON). */
function encodeCursor(row: ParkedRequest): string {
  return Buffer.from(JSON.stringify({ u: row.updatedAt, i: row.id })).toString('base64url');
}

function decodeCursor(value: string): { updatedAt: number; id: string } {
  try {
    const { u, i } = JSON.parse(Buffer.from(value, 'base64url').toString('utf8')) as { u: unknown; i: unknown };
    if (typeof u === 'number' && Number.isSafeInteger(u) && typeof i === 'string') return { updatedAt: u, id: i };
  } catch {
    // Reported below.
  }
  throw usageError('--cursor is not a cursor this command printed', LIST_USAGE);
}

function parseLimit(value: string | undefined): number {
  if (value === undefined) return DEFAULT_LIMIT;
  const limit = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!(limit >= 1 && limit <= MAX_LIMIT)) throw usageError(`--limit expects 1 to ${MAX_LIMIT}, got "${value}"`);
  return limit;
}

function parseStatus(value: string | undefined): RequestStatus | undefined {
  if (value === undefined) return undefined;
  if (!(STATUSES as readonly string[]).includes(value)) {
    throw usageError(`--status expects one of ${STATUSES.join(', ')}, got "${value}"`);
  }
  return value as RequestStatus;
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** Who asked, as the ledger stores them: the readable name where stored, else the keyed hash. */
const requesterOf = (row: ParkedRequest): string => row.requesterName ?? row.requester;

/** A run as `list --json` prints it: the row without its sealed state. */
function runJson(row: ParkedRequest) {
  return {
    id: row.id,
    flow: row.flow,
    status: row.status,
    waitingFor: row.waitingFor,
    requester: row.requester,
    requesterName: row.requesterName,
    version: row.version,
    startedAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
    expiresAt: iso(row.expiresAt),
  };
}

const waiting = (row: ParkedRequest): string =>
  row.status !== 'waiting'
    ? ''
    : row.waitingFor.length === 0
      ? 'requester'
      : row.waitingFor.map((w) => (w.role ? `${w.key} (${w.role})` : w.key)).join(', ');

/** Rows as aligned columns, the header first. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return `${[header, ...rows].map(line).join('\n')}\n`;
}

async function openReader(url: string): Promise<FullLedger> {
  try {
    // A reader: never prune (the servers writing the ledger own its retention).
    return await openLedger(url, { pruneIntervalMs: 0 });
  } catch (error) {
    throw new CliError(`cannot open the ledger: ${oneLine(error)}`);
  }
}

async function list(ledger: FullLedger, values: Values): Promise<number> {
  const now = Date.now();
  const limit = parseLimit(values.limit);
  const status = parseStatus(values.status);
  const rows = await ledger.runs.listRuns({
    ...(values.flow !== undefined ? { flow: values.flow } : {}),
    ...(status ? { status } : {}),
    ...(values.requester !== undefined ? { requester: values.requester } : {}),
    ...(values.since !== undefined ? { updatedSince: parseSince('since', values.since, now) } : {}),
    ...(values['started-since'] !== undefined
      ? { createdSince: parseSince('started-since', values['started-since'], now) }
      : {}),
    ...(values.cursor !== undefined ? { after: decodeCursor(values.cursor) } : {}),
    limit: limit + 1,
  });
  const page = rows.slice(0, limit);
  const cursor = rows.length > limit ? encodeCursor(page[page.length - 1]!) : null;
  if (values.json) {
    process.stdout.write(`${JSON.stringify({ runs: page.map(runJson), cursor }, null, 2)}\n`);
    return 0;
  }
  if (page.length === 0) {
    process.stdout.write('no runs\n');
    return 0;
  }
  process.stdout.write(
    table(
      ['ID', 'FLOW', 'STATUS', 'WAITING FOR', 'REQUESTER', 'STARTED', 'UPDATED'],
      page.map((r) => [r.id, r.flow, r.status, waiting(r), requesterOf(r), iso(r.createdAt)!, iso(r.updatedAt)!]),
    ),
  );
  if (cursor) process.stdout.write(`more: --cursor ${cursor}\n`);
  return 0;
}

/** What `show` has read about one run; each section of {@link SHOW_SECTIONS} prints from it. */
export interface RunView {
  readonly request: ParkedRequest;
  readonly decisions: readonly DecisionRecord[];
  /** Votes of quorum decisions (schema 11). */
  readonly votes?: readonly VoteRecord[];
  readonly steps: readonly StepRecord[];
  /** The audit timeline; `undefined` when the database holds no audit trail. */
  readonly audit: readonly AuditEntry[] | undefined;
}

/** One section of `show`: its JSON key and value, and its lines for the terminal (none: left out). */
interface ShowSection {
  readonly key: string;
  json(view: RunView): unknown;
  text(view: RunView): string[];
}

const decisionJson = (d: DecisionRecord) => ({
  key: d.key,
  role: d.role,
  status: d.status,
  requestedAt: iso(d.requestedAt),
  deadline: iso(d.deadline),
  decider: d.decider,
  deciderName: d.deciderName,
  decidedAt: iso(d.decidedAt),
  ...(d.deciderDisplay ? { deciderDisplay: d.deciderDisplay } : {}),
  ...(d.via ? { via: d.via } : {}),
  ...(d.onBehalfOf ? { onBehalfOf: d.onBehalfOf, onBehalfOfName: d.onBehalfOfName ?? null } : {}),
  ...(d.status === 'pending' && d.assignee && d.handover
    ? {
        handover: {
          to: d.handover.to,
          toName: d.handover.toName,
          by: d.handover.by,
          byName: d.handover.byName,
          reason: d.handover.reason,
          at: iso(d.handover.at),
        },
      }
    : {}),
});

const voteJson = (v: VoteRecord) => ({
  key: v.key,
  voter: v.voter,
  voterName: v.voterName,
  displayName: v.displayName,
  decidedAt: iso(v.decidedAt),
  via: v.via,
});

/** The lines of a quorum decision's votes, under its decision's line. */
const voteLines = (votes: readonly VoteRecord[] | undefined, key: string): string[] =>
  (votes ?? [])
    .filter((v) => v.key === key)
    .map((v) => `  vote by ${v.displayName ?? v.voterName ?? v.voter} at ${iso(v.decidedAt)} via ${v.via}`);

const stepJson = (s: StepRecord) => ({
  key: s.key,
  status: s.status,
  claims: s.claims,
  leaseUntil: iso(s.leaseUntil),
  recordedAt: iso(s.recordedAt),
});

const auditJson = (e: AuditEntry) => ({
  round: e.round,
  at: iso(e.at),
  via: e.via,
  principal: e.principalName ?? e.principal,
  before: e.before,
  after: e.after,
  asked: e.asked,
  received: e.received.map((r) => ({ key: r.key, action: r.action })),
  outcome: e.outcome,
  ...(e.message !== undefined ? { message: e.message } : {}),
});

const state = (value: unknown): string =>
  value === null ? '-' : typeof value === 'string' ? value : JSON.stringify(value);

/**
 * The sections of `show`, in order. Timers and notifications, once the ledger keeps them, are a
 * section each here (and a field of {@link RunView} read in `show`).
 */
export const SHOW_SECTIONS: readonly ShowSection[] = [
  {
    key: 'decisions',
    json: (v) =>
      v.decisions.map((d) => {
        const votes = (v.votes ?? []).filter((x) => x.key === d.key);
        return { ...decisionJson(d), ...(votes.length > 0 ? { votes: votes.map(voteJson) } : {}) };
      }),
    text: (v) =>
      v.decisions.flatMap((d) => {
        const who = d.deciderDisplay ?? d.deciderName ?? d.decider ?? '?';
        const behalf = d.onBehalfOf ? ` for ${d.onBehalfOfName ?? d.onBehalfOf}` : '';
        const via = d.via ? ` via ${d.via}` : '';
        const by = d.status === 'decided' ? ` by ${who}${behalf} at ${iso(d.decidedAt)}${via}` : '';
        const h = d.status === 'pending' && d.assignee ? d.handover : null;
        const handed = h
          ? `, handed by ${h.byName ?? h.by} to ${h.toName ?? h.to}${h.reason ? ` (${h.reason})` : ''} at ${iso(h.at)}`
          : '';
        const due = d.deadline !== null && d.status === 'pending' ? ` (deadline ${iso(d.deadline)})` : '';
        return [
          `${d.key}${d.role ? ` [${d.role}]` : ''}: ${d.status}${by}${handed}${due}`,
          ...voteLines(v.votes, d.key),
        ];
      }),
  },
  {
    key: 'steps',
    json: (v) => v.steps.map(stepJson),
    text: (v) =>
      v.steps.map((s) => {
        const when = s.recordedAt === null ? `lease until ${iso(s.leaseUntil)}` : `recorded ${iso(s.recordedAt)}`;
        return `${s.key}: ${s.status}, claimed ${s.claims}x, ${when}`;
      }),
  },
  {
    key: 'audit',
    json: (v) => (v.audit ? v.audit.map(auditJson) : null),
    text: (v) =>
      (v.audit ?? []).map((e) => {
        const who = e.principalName ?? e.principal;
        const moved = `${state(e.before)} -> ${state(e.after)}`;
        const why = e.message !== undefined ? `: ${e.message}` : '';
        return `${iso(e.at)} #${e.round} ${e.via} by ${who}: ${moved}, ${e.outcome}${why}`;
      }),
  },
];

/** The audit trail of `id`, when the ledger's database has one (`baton serve --audit`). */
async function readAudit(url: string, id: string): Promise<AuditEntry[] | undefined> {
  let audit: Awaited<ReturnType<typeof openAuditLog>> | undefined;
  try {
    audit = await openAuditLog(url, { pruneIntervalMs: 0 });
    return await audit.rounds(id);
  } catch (error) {
    process.stderr.write(`baton: warning: cannot read the audit trail: ${oneLine(error)}\n`);
    return undefined;
  } finally {
    await audit?.close().catch(() => {});
  }
}

async function show(ledger: FullLedger, url: string, id: string, values: Values): Promise<number> {
  const request = await ledger.requests.getRequest(id);
  if (!request) throw new CliError(`no run "${id}" in this ledger`);
  const view: RunView = {
    request,
    decisions: await ledger.decisions.listDecisions({ id }),
    votes: await ledger.decisions.listVotes(id),
    steps: await ledger.runs.listSteps(id),
    audit: await readAudit(url, id),
  };
  if (values.json) {
    const sections = Object.fromEntries(SHOW_SECTIONS.map((s) => [s.key, s.json(view)]));
    process.stdout.write(`${JSON.stringify({ run: runJson(request), ...sections }, null, 2)}\n`);
    return 0;
  }
  const head = [
    `run ${request.id} (${request.flow}): ${request.status}`,
    ...(request.status === 'waiting' ? [`waiting for: ${waiting(request)}`] : []),
    `requester: ${requesterOf(request)}`,
    `started ${iso(request.createdAt)}, updated ${iso(request.updatedAt)} (version ${request.version}), kept until ${iso(request.expiresAt)}`,
  ];
  const body = SHOW_SECTIONS.flatMap((s) => {
    const lines = s.text(view);
    return lines.length === 0 ? [] : ['', `${s.key}:`, ...lines.map((l) => `  ${l}`)];
  });
  process.stdout.write(`${[...head, ...body].join('\n')}\n`);
  return 0;
}

/** Run `baton runs`; resolves to the exit code. */
export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, OPTIONS, USAGE);
  const [sub, ...rest] = positionals;
  if (values.help || sub === 'help') {
    process.stderr.write(HELP);
    return 0;
  }
  const usage = sub !== undefined && Object.hasOwn(USAGES, sub) ? USAGES[sub as keyof typeof USAGES] : undefined;
  if (usage === undefined) {
    throw usageError(sub === undefined ? 'missing a subcommand' : `unknown subcommand "${sub}"`, USAGE);
  }
  const arity = ARITY[sub as keyof typeof USAGES];
  if (rest.length < arity)
    throw usageError(
      rest.length === 1 ? (sub === 'cancel' ? 'missing <flows-module>' : 'missing <step>') : 'missing <id>',
      usage,
    );
  if (rest.length > arity) throw usageError(`unexpected argument "${rest[arity]}"`, usage);
  if (values.ledger === undefined) throw usageError('--ledger URL is required', usage);
  requireExistingLedger(values.ledger);
  const ledger = await openReader(values.ledger);
  try {
    if (sub === 'list') return await list(ledger, values);
    if (sub === 'show') return await show(ledger, values.ledger, rest[0]!, values);
    return await act(sub as 'cancel' | 'terminate' | 'retry-step', rest[0]!, rest[1], {
      ledger,
      url: values.ledger,
      reason: values.reason,
      as: values.as,
      storePrincipalNames: values['store-principal-names'] === true,
    });
  } finally {
    await ledger.close().catch(() => {});
  }
}
