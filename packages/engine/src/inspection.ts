/**
 * Inspection across rounds. A Baton flow lives in many short actors (one per
 * round, perhaps in many processes), so XState's inspector would see a new,
 * unrelated root actor every round. This wraps any inspection observer so
 * every round of one flow instance reports under one stable session id,
 * `baton:<fid>`, derived from the flow-instance id sealed in the state; child
 * actors become `baton:<fid>/<id>`. The restored snapshot is the first thing
 * each round reports, and each delivered answer is an ordinary `@xstate.event`.
 */
import type { AnyActorRef, InspectionEvent, Observer } from 'xstate';

/** What `createRunner({ inspect })` accepts: an observer or a function, as XState's `inspect` option. */
export type Inspector = Observer<InspectionEvent> | ((event: InspectionEvent) => void);

/** The stable inspection session id of a flow instance. */
export function inspectionSessionId(fid: string): string {
  return `baton:${fid}`;
}

/** Forward inspection events of one round under the flow instance's stable identity. */
export function stableInspector(fid: string, inspector: Inspector): (event: InspectionEvent) => void {
  const session = inspectionSessionId(fid);
  const forward = typeof inspector === 'function' ? inspector : (event: InspectionEvent) => inspector.next?.(event);
  return (event) => {
    const root = event.rootId;
    const rename = (id: string) => (id === root ? session : `${session}/${id}`);
    const refs = new WeakMap<AnyActorRef, AnyActorRef>();
    const wrap = (ref: AnyActorRef | undefined): AnyActorRef | undefined => {
      if (!ref) return ref;
      let wrapped = refs.get(ref);
      if (!wrapped) {
        wrapped = new Proxy(ref, {
          get(target, property) {
            if (property === 'sessionId') return rename(target.sessionId);
            if (property === '_parent') return wrap((target as { _parent?: AnyActorRef })._parent);
            const value = Reflect.get(target, property, target);
            return typeof value === 'function' ? value.bind(target) : value;
          },
        });
        refs.set(ref, wrapped);
      }
      return wrapped;
    };
    const rewritten = { ...event, rootId: session, actorRef: wrap(event.actorRef as AnyActorRef)! } as InspectionEvent;
    if ('sourceRef' in event) {
      (rewritten as { sourceRef?: AnyActorRef }).sourceRef = wrap(event.sourceRef as AnyActorRef | undefined);
    }
    forward(rewritten);
  };
}
