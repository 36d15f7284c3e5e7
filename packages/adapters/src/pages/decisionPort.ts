/**
 * What the decision pages need of the engine, as one small interface: the
 * inbox of a signed-in person, one pending decision described as data (for
 * the page), and an answer submitted once (recorded, invalid with the
 * engine's sentence, declined, or refused with a reason code the page maps
 * to an HTTP status). The pages never decide who may decide or whether an
 * answer is valid: every such check is the engine's.
 */
import type { ElicitationSchema, InboxItem, QuorumStatus } from '@baton/engine';
import type { RefusalReason } from '../mcp/decisionRefusals.js';

/** Who is signed in, as the engine sees a decider. */
export interface PageCaller {
  readonly principal: string;
  readonly roles: readonly string[];
  /** The signed-in person's display name (ID token `name`), for the audit when names are stored. */
  readonly displayName?: string;
}

export { REFUSAL_TITLES, type RefusalReason } from '../mcp/decisionRefusals.js';

/** A decision already made on the request. */
export interface DecisionMade {
  readonly key: string;
  /** Who made it, as it may be shown: a display name, "you", or a keyed hash. */
  readonly by: string;
  /** Whom they made it for (a delegation), shown the same way. */
  readonly for?: string;
  /** When (ms since epoch). */
  readonly at?: number;
}

/** A pending decision, as the page shows it. Times in ms since epoch. */
export interface DecisionView {
  readonly id: string;
  readonly key: string;
  readonly flow: string;
  readonly flowTitle?: string;
  readonly message: string;
  /** Who asked: a display name or a keyed hash. */
  readonly requester?: string;
  /** The request's arguments, when the flow allows showing values. */
  readonly args?: Readonly<Record<string, unknown>>;
  readonly requestedAt?: number;
  readonly deadline?: number;
  readonly requestedSchema: ElicitationSchema;
  /** Decisions already made on the request. */
  readonly decisions: readonly DecisionMade[];
  /** Set when the caller decides it for someone else: "for bob (handed to you by bob: on leave)". */
  readonly delegated?: string;
  /** Set while it is handed over: "handed by bob to dave (on leave)". */
  readonly handedOver?: string;
  /** A quorum decision: how many approvals it needs and has, and who approved. */
  readonly quorum?: PageQuorum;
}

/** Where a quorum decision stands, as a page shows it. */
export interface PageQuorum {
  readonly required: number;
  readonly approvals: number;
  readonly needed: number;
  /** Who approved so far: "you", a name (when names are stored) or a keyed hash. */
  readonly approvedBy: readonly string[];
}

/** The engine's quorum standing as a page shows it. */
export function pageQuorum(quorum: QuorumStatus): PageQuorum {
  return {
    required: quorum.required,
    approvals: quorum.approvals,
    needed: quorum.needed,
    approvedBy: quorum.votes.filter((v) => v.approves).map((v) => (v.you ? 'you' : shownPrincipal(v.decider))),
  };
}

/**
 * A principal as a page shows it: an identity provider's `<iss>#<sub>` as its `sub` (the issuer is
 * the same for everyone here), anything else (a keyed hash, a local name) as it is.
 */
export function shownPrincipal(principal: string): string {
  const at = principal.lastIndexOf('#');
  return at > 0 && /^https?:\/\//.test(principal) ? principal.slice(at + 1) : principal;
}

/** What handing a decision to someone else came to. */
export type Handed = { readonly type: 'handed'; readonly message: string } | Refused;

/** A refusal: the reason code and the engine's sentence. */
export interface Refused {
  readonly type: 'refused';
  readonly reason: RefusalReason;
  readonly message: string;
  /** For `decided`: who made it and when, when the engine says. */
  readonly decided?: DecisionMade;
  /** For `ambiguous`: the decisions the caller may make on the request (each gets a link). */
  readonly keys?: readonly string[];
}

/** What `describe` answers. */
export type Described = { readonly type: 'pending'; readonly view: DecisionView } | Refused;

/** What `answer` answers. */
export type Answered =
  | { readonly type: 'recorded'; readonly message: string }
  | { readonly type: 'declined'; readonly message: string }
  | {
      readonly type: 'invalid';
      /** The schema's complaint in one phrase (`comment: too long`). */
      readonly message: string;
      /** Per field (`field` is the form field's name, or `answer` for the whole), what was wrong. */
      readonly issues?: readonly { readonly field: string; readonly hint: string }[];
    }
  | Refused;

/** One decision of one request, asked by one caller. */
export interface DecisionAddress {
  readonly id: string;
  readonly key?: string;
  readonly caller: PageCaller;
}

/** The engine, as the pages use it. */
export interface PageDecisions {
  /** The pending decisions the caller may make. */
  inbox(caller: PageCaller): Promise<readonly InboxItem[]>;
  /** One decision the caller may make, or why not. */
  describe(address: DecisionAddress): Promise<Described>;
  /** Submit the caller's answer once. */
  answer(
    address: DecisionAddress & {
      readonly answer: { readonly action: 'accept' | 'decline'; readonly content?: Record<string, unknown> };
    },
  ): Promise<Answered>;
  /** Hand the decision to `to` (optional: pages without it show no "hand to…" form). */
  delegate?(address: DecisionAddress & { readonly to: string; readonly reason?: string }): Promise<Handed>;
}

/** The HTTP status a refusal is answered with. */
export function refusalStatus(reason: RefusalReason): number {
  return {
    four_eyes: 403,
    not_allowed: 403,
    unknown: 404,
    decided: 409,
    expired: 410,
    ended: 410,
    ambiguous: 400,
    unavailable: 503,
  }[reason];
}
