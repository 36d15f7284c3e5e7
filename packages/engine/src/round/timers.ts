/**
 * Durable timers. XState keeps `after` delays in memory only, and a restored
 * actor never fires them. Baton turns every delayed event the root machine
 * schedules into a wall-clock deadline carried in the requestState: at the end
 * of a round the live deadlines are read off XState's scheduler; on the next
 * round, deadlines that have passed fire before any response is delivered and
 * the others are scheduled again under their original ids, so that leaving a
 * state still cancels them the XState way. Timers never fire inside a round.
 */
import type { AnyActorRef, EventObject } from 'xstate';

/**
 * A persisted deadline: the scheduled event's id, when it is due (ms since epoch), and the
 * event, left out when it is `{ type: id }` (as for every XState `after` delay, whose long id
 * would otherwise travel twice).
 */
export type Deadline = [id: string, dueAt: number, event?: EventObject];

/** The event a deadline sends. */
function eventOf([id, , event]: Deadline): EventObject {
  return event ?? { type: id };
}

/**
 * An XState clock that never fires: Baton decides when delays are due. Each
 * round's actor gets one so nothing keeps the process alive between rounds.
 */
export const inertClock = {
  setTimeout: () => 0,
  clearTimeout: () => {},
};

/**
 * Wraps the actor system's scheduler before `start()` so every delayed event
 * scheduled by the root actor is remembered with its wall-clock due time.
 * Returns a function reading the live deadlines at the end of the round.
 */
export function trackDeadlines(actor: AnyActorRef, now: () => number): () => Deadline[] {
  const scheduler = actor.system.scheduler;
  // Only the root's timers to itself are kept, so their ids alone key them (a cancel from any
  // other actor never names one of them).
  const live = new Map<string, Deadline>();
  // On the inert clock nothing XState schedules ever fires: the root's own timers then live only
  // here (they fire when a later round restores them), and XState's scheduler is spared them.
  const inert = (actor as { clock?: unknown }).clock === inertClock;
  const { schedule, cancel } = scheduler;
  scheduler.schedule = (source, target, event, delay, id) => {
    const scheduledId = id ?? `baton.${live.size}.${delay}`;
    if (source === actor && target === actor) {
      const dueAt = now() + delay;
      const plain = event.type === scheduledId && Object.keys(event).length === 1;
      live.set(scheduledId, plain ? [scheduledId, dueAt] : [scheduledId, dueAt, event]);
      if (inert) return;
    }
    schedule.call(scheduler, source, target, event, delay, scheduledId);
  };
  scheduler.cancel = (source, id) => {
    if (source === actor) live.delete(id);
    cancel.call(scheduler, source, id);
  };
  return () => [...live.values()];
}

/**
 * Re-arm persisted deadlines on a restored actor: the due ones are sent now,
 * in due order, and the rest scheduled again with their original ids.
 * Returns how many fired.
 */
export function restoreDeadlines(actor: AnyActorRef, deadlines: readonly Deadline[], now: number): number {
  const due = deadlines.filter((d) => d[1] <= now).sort((a, b) => a[1] - b[1]);
  for (const deadline of deadlines) {
    const [id, dueAt] = deadline;
    if (dueAt > now) actor.system.scheduler.schedule(actor, actor, eventOf(deadline), dueAt - now, id);
  }
  // Scheduled first, fired second: a due event that leaves a state cancels that state's other timers.
  for (const deadline of due) actor.send(eventOf(deadline));
  return due.length;
}

/** Whether a persisted value looks like a list of deadlines (it came out of an authenticated state). */
export function isDeadlineList(value: unknown): value is Deadline[] {
  return (
    Array.isArray(value) &&
    value.every(
      (d) =>
        Array.isArray(d) &&
        (d.length === 2 || d.length === 3) &&
        typeof d[0] === 'string' &&
        typeof d[1] === 'number' &&
        (d.length === 2 ||
          (typeof d[2] === 'object' && d[2] !== null && typeof (d[2] as EventObject).type === 'string')),
    )
  );
}

/** When the earliest of `deadlines` is due (ms), or `null` when there is none: the scheduler's due time. */
export function nextDue(deadlines: readonly Deadline[] | undefined): number | null {
  if (!deadlines || deadlines.length === 0) return null;
  let earliest = Number.POSITIVE_INFINITY;
  for (const d of deadlines) if (d[1] < earliest) earliest = d[1];
  return earliest;
}
