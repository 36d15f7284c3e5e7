/**
 * `notify()`: an XState action that announces something from a flow (a
 * reminder, an escalation, an end), for any transition, `after` delays
 * included. It emits a `baton.notify` event, which the round collects; when
 * the runner has an outbox (`notifications` with a ledger that has one), each
 * is written as a `flow.notification` in the same ledger write as the round
 * that raised it, and delivered from there at least once (signed webhooks in
 * `baton serve`). Outside Baton's runner it does nothing.
 */
import { type EventObject, emit } from 'xstate';

/** The type of the event `notify()` emits. */
export const NOTIFY_EVENT = 'baton.notify';

/** What a flow announces. */
export interface Notification {
  /** What it is about, in the flow's words (`reminder`, `escalated`, `expired`, …). */
  readonly kind: string;
  /** Who it is for, in the flow's words (a role, `requester`, an address), when it says. */
  readonly to?: string;
  /** Anything else a receiver needs (JSON). */
  readonly data?: Record<string, unknown>;
}

/** The event `notify()` emits. */
export interface NotifyEvent extends EventObject, Notification {
  readonly type: typeof NOTIFY_EVENT;
}

/** Whether an emitted event is a `notify()` one (from an authenticated state or this process). */
export function isNotifyEvent(event: unknown): event is NotifyEvent {
  const e = event as Partial<NotifyEvent> | null;
  return typeof e === 'object' && e !== null && e.type === NOTIFY_EVENT && typeof e.kind === 'string';
}

/**
 * An action announcing `notification` (or what the function returns from the machine's context
 * and event).
 *
 * @example
 * ```ts
 * import { notify } from '@baton/engine';
 *
 * // In a state that awaits a manager's decision: remind after a day.
 * const after = { 86_400_000: { actions: notify({ kind: 'reminder', to: 'manager' }) } };
 * ```
 */
export function notify<TContext = any, TEvent extends EventObject = any>(
  notification: Notification | ((args: { context: TContext; event: TEvent }) => Notification),
): any {
  return emit(((args: { context: TContext; event: TEvent }) => {
    const n = typeof notification === 'function' ? notification(args) : notification;
    return {
      type: NOTIFY_EVENT,
      kind: n.kind,
      ...(n.to === undefined ? {} : { to: n.to }),
      ...(n.data === undefined ? {} : { data: n.data }),
    } as NotifyEvent;
  }) as any);
}
