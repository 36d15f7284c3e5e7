/**
 * `progress()`: an XState action that reports how far a running flow is, for
 * the request that runs the round (MCP `notifications/progress` with the
 * request's `progressToken`, sent by the adapters while the round is still
 * running). It emits a `baton.progress` event, which the round hands to the
 * caller's `onProgress` (`CallContext`). Put it on the entry of the states a
 * round passes through (each doing its work in an invoked promise): the
 * notifications go out as the machine gets there. Rounds nobody waits for (a
 * scheduled timer) report to no one; outside Baton's runner it does nothing.
 */
import { type EventObject, emit } from 'xstate';
import type { FlowProgress } from '../contract/call.js';

/** The type of the event `progress()` emits. */
export const PROGRESS_EVENT = 'baton.progress';

/** The event `progress()` emits. */
export interface ProgressEvent extends EventObject, FlowProgress {
  readonly type: typeof PROGRESS_EVENT;
}

/** Whether an emitted event is a `progress()` one with a finite `progress`. */
export function isProgressEvent(event: unknown): event is ProgressEvent {
  const e = event as Partial<ProgressEvent> | null;
  return typeof e === 'object' && e !== null && e.type === PROGRESS_EVENT && Number.isFinite(e.progress);
}

/**
 * An action reporting `report` (or what the function returns from the machine's context and
 * event) to the request running the round.
 *
 * @example
 * ```ts
 * import { progress } from '@baton/engine';
 *
 * // A state that does half of the work in an invoked promise:
 * const half = { entry: progress({ progress: 50, total: 100, message: 'Halfway' }), invoke: { id: 'work', src: 'work', onDone: 'done' } };
 * ```
 */
export function progress<TContext = any, TEvent extends EventObject = any>(
  report: FlowProgress | ((args: { context: TContext; event: TEvent }) => FlowProgress),
): any {
  return emit(((args: { context: TContext; event: TEvent }) => {
    const p = typeof report === 'function' ? report(args) : report;
    return {
      type: PROGRESS_EVENT,
      progress: p.progress,
      ...(p.total === undefined ? {} : { total: p.total }),
      ...(p.message === undefined ? {} : { message: p.message }),
    } as ProgressEvent;
  }) as any);
}
