/**
 * Inspection across rounds. A Baton flow lives in many short actors (one per
 * round, perhaps in many processes), so XState's inspector would see a new,
 * unrelated root actor every round. This wraps any inspection observer so
 * every round of one flow instance reports under one stable session id,
 * `baton:<fid>`, derived from the flow-instance id sealed in the state; child
 * actors become `baton:<fid>/<id>`. The root actor's `id` is reported equal to
 * its session id, so Stately's inspector labels it by the machine's id in every
 * round. The restored snapshot is the first thing each round reports, and each
 * delivered answer is an ordinary `@xstate.event`.
 *
 * Secrets: a flow's sensitive inputs (`form({ sensitive: true })`) and context
 * paths (`defineFlow({ sensitive: [...] })`) are redacted (`'[redacted]'`)
 * before an event reaches the inspector: answer payloads, context fields, the
 * outputs of invoked actors and the machine's input (how values enter the
 * context) and, by value, any other place a sensitive string shows up (a final
 * output that quotes it).
 *
 * Order: {@link flushInspector} waits, bounded, for what an inspector defers
 * (Stately's serialises each event on a `setTimeout(0)`), so a round's answer
 * does not overtake its inspection events.
 */
import type { AnyActorRef, InspectionEvent, Observer } from 'xstate';

/** An inspection observer or function, as XState's `inspect` option. */
export type InspectionObserver = Observer<InspectionEvent> | ((event: InspectionEvent) => void);

/**
 * What `createRunner({ inspect })` accepts: an observer or a function, as XState's `inspect`
 * option, or an object whose `inspect` is one (what `@statelyai/inspect`'s `createWebSocketInspector`,
 * `createBrowserInspector` and `createSkyInspector` return). An object may have a `flush()`,
 * awaited (bounded) after every round before its answer goes out.
 */
export type Inspector =
  | InspectionObserver
  | { readonly inspect: InspectionObserver; readonly flush?: () => unknown; readonly stop?: () => unknown };

/** What a round's inspection redacts: from a flow's sensitive inputs and context paths. */
export interface Redaction {
  /** Event types whose payload (all but `type` and `action`) is redacted: `input.<key>`. */
  readonly events: ReadonlySet<string>;
  /** Context paths (split on dots) redacted in the root's snapshots. */
  readonly context: readonly (readonly string[])[];
}

/** The secrets of a round with nothing to redact (never added to). */
const NO_SECRETS: Set<string> = new Set();

/** The placeholder that replaces a sensitive value. */
export const REDACTED = '[redacted]';

/** The stable inspection session id of a flow instance. */
export function inspectionSessionId(fid: string): string {
  return `baton:${fid}`;
}

/** The observer of an inspector (its `inspect` when it is an object with one). */
export function inspectionObserver(inspector: Inspector): InspectionObserver {
  return typeof inspector === 'object' && inspector !== null && 'inspect' in inspector ? inspector.inspect : inspector;
}

const isPlain = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' &&
  value !== null &&
  (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null);

/** Replace every occurrence of a secret in the strings of a JSON-like value (plain objects and arrays only). */
function scrub(value: unknown, secrets: ReadonlySet<string>, depth = 0): unknown {
  if (secrets.size === 0 || depth > 32) return value;
  if (typeof value === 'string') {
    let out = value;
    for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    return out;
  }
  if (Array.isArray(value)) {
    let changed = false;
    const out = value.map((item) => {
      const next = scrub(item, secrets, depth + 1);
      if (next !== item) changed = true;
      return next;
    });
    return changed ? out : value;
  }
  if (isPlain(value)) {
    let out: Record<string, unknown> | undefined;
    for (const [key, item] of Object.entries(value)) {
      const next = scrub(item, secrets, depth + 1);
      if (next !== item) {
        out ??= { ...value };
        out[key] = next;
      }
    }
    return out ?? value;
  }
  return value;
}

/** Collect the strings (of at least 3 characters: shorter ones would blank out unrelated text) of a value. */
function collect(value: unknown, into: Set<string>, depth = 0): void {
  if (depth > 32) return;
  if (typeof value === 'string') {
    if (value.length >= 3 && value !== REDACTED) into.add(value);
  } else if (typeof value === 'number' || typeof value === 'bigint') {
    if (String(value).length >= 3) into.add(String(value));
  } else if (Array.isArray(value)) {
    for (const item of value) collect(item, into, depth + 1);
  } else if (isPlain(value)) {
    for (const item of Object.values(value)) collect(item, into, depth + 1);
  }
}

/** A copy of `context` with the value at each path replaced by the placeholder (and its strings collected). */
function redactPaths(context: unknown, paths: Redaction['context'], secrets: Set<string>): unknown {
  if (!isPlain(context)) return context;
  const out: Record<string, unknown> = { ...context };
  for (const path of paths) {
    let node: Record<string, unknown> | undefined = out;
    for (let i = 0; node && i < path.length; i++) {
      const key = path[i]!;
      if (!Object.hasOwn(node, key)) break;
      if (i === path.length - 1) {
        collect(node[key], secrets);
        node[key] = REDACTED;
      } else {
        const child: unknown = node[key];
        if (!isPlain(child)) break;
        const copy: Record<string, unknown> = { ...child };
        node[key] = copy;
        node = copy;
      }
    }
  }
  return out;
}

/**
 * A copy of a flow's arguments with the values at its sensitive context paths replaced by
 * {@link REDACTED}, and any other string equal to one of them scrubbed (for the audit trail).
 */
export function redactArgs(args: unknown, paths: Redaction['context']): unknown {
  if (paths.length === 0) return args;
  const secrets = new Set<string>();
  return scrub(redactPaths(args, paths, secrets), secrets);
}

/** A root snapshot read after its round stopped the actor, as the state the flow waits in. */
function unstopped(snapshot: unknown): unknown {
  const s = snapshot as { status?: string } | undefined;
  if (s?.status !== 'stopped') return snapshot;
  return Object.assign(Object.create(Object.getPrototypeOf(s)), s, { status: 'active' });
}

/** The redacted payload of an event: all but `type` and `action`. */
function redactPayload(event: Record<string, unknown>, secrets: Set<string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(event)) {
    if (key === 'type' || key === 'action' || key === 'actorId') out[key] = value;
    else {
      collect(value, secrets);
      out[key] = REDACTED;
    }
  }
  return out;
}

/** How a round's inspection hands an event on: the inspector's observer, resolved once per runner. */
export type InspectionForward = (event: InspectionEvent) => void;

/** The function that hands events to an inspector's observer (resolve it once, not per round). */
export function inspectionForward(inspector: Inspector): InspectionForward {
  const observer = inspectionObserver(inspector);
  return typeof observer === 'function' ? observer : (event) => observer.next?.(event);
}

/** Whether a redaction has anything to redact (`undefined` when it has not: nothing to do per event). */
export function activeRedaction(redaction: Redaction | undefined): Redaction | undefined {
  return redaction && (redaction.events.size > 0 || redaction.context.length > 0) ? redaction : undefined;
}

/**
 * An actor as the inspector sees it: under the round's stable session (`baton:<fid>` for the
 * root, `baton:<fid>/<sessionId>` for the others), its parent likewise, and its snapshot
 * redacted (the root's never shown stopped). A proxy handler with its state in fields (no
 * closure per actor); everything else reads through to the actor.
 */
class ActorView implements ProxyHandler<AnyActorRef> {
  constructor(
    private readonly round: RoundInspection,
    private readonly isRoot: boolean,
  ) {}

  get(target: AnyActorRef, property: string | symbol): unknown {
    const { round, isRoot } = this;
    if (property === 'sessionId') return isRoot ? round.session : `${round.session}/${target.sessionId}`;
    // Stately names an actor by its machine's id when its `id` equals its `sessionId`.
    if (property === 'id' && isRoot) return round.session;
    if (property === '_parent') return round.view((target as { _parent?: AnyActorRef })._parent);
    // Stately reads a snapshot later (on a timer), perhaps once the round stopped the actor:
    // the root is shown in the state its round ended in, not stopped.
    if (property === 'getSnapshot' && (isRoot || round.redaction)) {
      return () => round.redactSnapshot(isRoot ? unstopped(target.getSnapshot()) : target.getSnapshot(), isRoot);
    }
    const value = Reflect.get(target, property, target);
    return typeof value === 'function' ? value.bind(target) : value;
  }
}

/**
 * One round's inspection: an observer (XState's `inspect` option) that forwards each event under
 * the flow instance's stable identity, redacting what its redaction marks sensitive. Per round it
 * costs this object; per event, a few field writes (XState makes a fresh event object per
 * observer call and a round's actor has this observer only, so the event is rewritten in place);
 * per actor, one proxy, made when the actor first shows. Redaction work (copies of events and
 * snapshots, the secrets it learns) is done only for a flow with something sensitive.
 */
class RoundInspection implements Observer<InspectionEvent> {
  readonly session: string;
  /** The round's root actor's own session id (XState's `rootId`). */
  private root = '';
  private rootActor: AnyActorRef | undefined;
  private rootView: AnyActorRef | undefined;
  /** Views of the other actors (invoked steps), made on first sight. */
  private views: Map<AnyActorRef, AnyActorRef> | undefined;
  /** Strings of the sensitive values seen this round, scrubbed wherever else they show. */
  private readonly secrets: Set<string>;

  constructor(
    fid: string,
    private readonly forward: InspectionForward,
    readonly redaction: Redaction | undefined,
  ) {
    this.session = inspectionSessionId(fid);
    this.secrets = redaction ? new Set() : NO_SECRETS;
  }

  /**
   * Take the round's actor's events straight from its system (see {@link inspectDirectly});
   * `constructed` as there. The events need no `rootId`: the root is known from here on.
   */
  attach(actor: AnyActorRef, constructed: boolean): void {
    this.root = actor.sessionId;
    // The root's view may exist already (a fresh actor reported its construction through XState).
    if (this.rootActor !== actor) {
      this.rootActor = actor;
      this.rootView = new Proxy(actor, new ActorView(this, true));
    }
    takeDispatch(actor, (event) => this.next(event), this, constructed);
  }

  /** The view of an actor (the same one for the whole round). */
  view(ref: AnyActorRef | undefined): AnyActorRef | undefined {
    if (!ref) return ref;
    if (ref === this.rootActor) return this.rootView;
    if (ref.sessionId === this.root) {
      this.rootActor = ref;
      this.rootView = new Proxy(ref, new ActorView(this, true));
      return this.rootView;
    }
    this.views ??= new Map();
    let view = this.views.get(ref);
    if (!view) {
      view = new Proxy(ref, new ActorView(this, false));
      this.views.set(ref, view);
    }
    return view;
  }

  next(event: InspectionEvent): void {
    const actorRef = event.actorRef as AnyActorRef;
    if (this.rootActor === undefined) this.root = event.rootId;
    const isRootActor = actorRef === this.rootActor || actorRef.sessionId === this.root;
    // A round ends by stopping its actor; the flow itself goes on (it waits for answers, or is
    // done): the stop is not reported, so the inspector shows the state the round ended in.
    if (
      isRootActor &&
      event.type === '@xstate.snapshot' &&
      (event.snapshot as { status?: string }).status === 'stopped'
    ) {
      return;
    }
    const rewritten = event as { rootId: string; actorRef: AnyActorRef } & InspectionEvent;
    rewritten.rootId = this.session;
    rewritten.actorRef = this.view(actorRef)!;
    if (event.type === '@xstate.event' && event.sourceRef) {
      (rewritten as { sourceRef?: AnyActorRef }).sourceRef = this.view(event.sourceRef as AnyActorRef);
    }
    if (this.redaction) {
      const r = rewritten as { event?: unknown; snapshot?: unknown; action?: { params?: unknown } };
      if (event.type !== '@xstate.actor' && event.type !== '@xstate.action' && event.event) {
        r.event = this.redactEvent(event.event as Record<string, unknown>, isRootActor, this.redaction);
      }
      if (event.type === '@xstate.snapshot') r.snapshot = this.redactSnapshot(event.snapshot, isRootActor);
      if (event.type === '@xstate.action' && r.action) r.action = { ...r.action, params: REDACTED };
    }
    this.forward(rewritten);
  }

  /** A snapshot as the inspector may see it: sensitive context paths and what quotes them redacted. */
  redactSnapshot(snapshot: unknown, root: boolean): unknown {
    const redaction = this.redaction;
    if (!redaction || !snapshot || typeof snapshot !== 'object') return snapshot;
    const s = snapshot as { context?: unknown; output?: unknown };
    const copy = Object.assign(Object.create(Object.getPrototypeOf(snapshot)), snapshot) as typeof s;
    if (root) {
      if (redaction.context.length > 0) copy.context = redactPaths(s.context, redaction.context, this.secrets);
      copy.context = scrub(copy.context, this.secrets);
      copy.output = scrub(s.output, this.secrets);
    } else if (redaction.context.length > 0 && s.output !== undefined) {
      // An invoked actor's output is how values enter the context: never shown.
      collect(s.output, this.secrets);
      copy.output = REDACTED;
    }
    return copy;
  }

  private redactEvent(event: Record<string, unknown>, toRoot: boolean, redaction: Redaction): Record<string, unknown> {
    const type = String(event.type);
    if (redaction.events.has(type)) return redactPayload(event, this.secrets);
    // What invoked actors receive and report (a promise's result) is how values enter the context.
    // The machine's input (the tool's arguments) may carry one too, before the context holds it.
    if (redaction.context.length > 0 && (!toRoot || type === 'xstate.init' || type.startsWith('xstate.done.actor.'))) {
      return redactPayload(event, this.secrets);
    }
    return scrub(event, this.secrets) as Record<string, unknown>;
  }
}

/**
 * The observer of one round's inspection (XState's `inspect` option): every event forwarded under
 * the flow instance's stable identity, redacting what `redaction` marks sensitive. Create one per
 * round (the secrets it sees are remembered for the round); resolve `forward` once per runner
 * ({@link inspectionForward}).
 */
export function stableInspector(fid: string, forward: InspectionForward, redaction?: Redaction): RoundObserver {
  return new RoundInspection(fid, forward, activeRedaction(redaction));
}

/** One round's inspection: an observer, which may also take its actor's events directly. */
export interface RoundObserver {
  next(event: InspectionEvent): void;
  /** Take the actor's events from its system: see {@link inspectDirectly}. */
  attach(actor: AnyActorRef, constructed: boolean): void;
}

/**
 * Hand an actor system's inspection events to `observer` directly, rather than through XState's
 * dispatch, which copies every event for every observer (`{ ...event, rootId }`, a copy V8 makes
 * slowly): with a no-op observer, that dispatch and an `inspect` option given to `createActor`
 * cost a round more than all the rest of its inspection. The events are XState's own, fresh for
 * each call, given their `rootId` in place; `observer` must be the system's only one.
 *
 * `constructed`: the actor was created without an `inspect` option from a restored snapshot, so
 * the events of its construction (an `@xstate.actor` for it and for each child restored with it,
 * in that order: nothing else happens while a snapshot is restored) are reported here, as XState
 * would have. An actor created from input (whose construction runs the initial microsteps) must
 * be created with `observer` as its `inspect` option instead, and `constructed` be false.
 *
 * When the system lacks the (internal) dispatch hook, as a later XState may, the events go
 * through XState's dispatch (`system.inspect`, public), only slower.
 */
export function inspectDirectly(actor: AnyActorRef, observer: InspectionObserver, constructed: boolean): void {
  const rootId = actor.sessionId;
  const deliver =
    typeof observer === 'function'
      ? (event: InspectionEvent) => {
          event.rootId = rootId;
          observer(event);
        }
      : (event: InspectionEvent) => {
          event.rootId = rootId;
          observer.next?.(event);
        };
  takeDispatch(actor, deliver, observer, constructed);
}

/** Replace the system's dispatch by `deliver` (or, without the hook, observe it) and report the construction. */
function takeDispatch(
  actor: AnyActorRef,
  deliver: (event: InspectionEvent) => void,
  observer: InspectionObserver,
  constructed: boolean,
): void {
  const system = actor.system as { _sendInspectionEvent?: unknown; inspect(observer: InspectionObserver): unknown };
  if (typeof system._sendInspectionEvent === 'function') system._sendInspectionEvent = deliver;
  else if (constructed) system.inspect(observer);
  if (constructed) announce(actor, deliver);
}

/** Report an actor and, depth first, the children restored with it (`@xstate.actor` each). */
function announce(actorRef: AnyActorRef, deliver: (event: InspectionEvent) => void): void {
  deliver({ type: '@xstate.actor', actorRef, rootId: '' });
  const children = (actorRef.getSnapshot() as { children?: Record<string, AnyActorRef | undefined> }).children;
  if (children) for (const child of Object.values(children)) if (child) announce(child, deliver);
}

/**
 * Whether an inspector may defer what it sends: an object with `inspect` (Stately's serialise
 * each event on a `setTimeout(0)`) or with `flush()`. A plain observer or function is called
 * synchronously with each event: by the time a round ends it has had them all.
 */
export function defersEvents(inspector: Inspector): boolean {
  return typeof inspector === 'object' && inspector !== null && ('inspect' in inspector || 'flush' in inspector);
}

/**
 * Wait, at most `boundMs`, until what an inspector deferred has been handed on: its `flush()`
 * when it has one, then a timer turn and an immediate (Stately's inspectors serialise each event
 * on a `setTimeout(0)`, queued before ours). A dead or slow inspector costs a round at most
 * `boundMs`. Nothing to wait for when the inspector does not defer ({@link defersEvents}).
 */
export async function flushInspector(inspector: Inspector, boundMs = 100): Promise<void> {
  if (!defersEvents(inspector)) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const bound = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, boundMs);
  });
  const flushed = (async () => {
    const flush = (inspector as { flush?: () => unknown }).flush;
    if (flush) await Promise.resolve(flush.call(inspector)).catch(() => {});
    await new Promise<void>((resolve) => setTimeout(resolve, 0));
    await new Promise<void>((resolve) => setImmediate(resolve));
  })();
  await Promise.race([flushed, bound]);
  clearTimeout(timer);
}
