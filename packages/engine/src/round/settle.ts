/**
 * Waits until a running actor has settled: finished, failed, or active with
 * no invoked child still running (every promise of the round has resolved).
 * Bounded by the round's time budget, since an invoked promise that is still
 * running when a state is persisted would run again on the next round.
 */
import type { AnyActorRef, AnyMachineSnapshot } from 'xstate';

function hasRunningChildren(snapshot: AnyMachineSnapshot): boolean {
  return Object.values(snapshot.children).some(
    (child) => (child as AnyActorRef | undefined)?.getSnapshot().status === 'active',
  );
}

/** Whether the snapshot is settled. */
export function isSettled(snapshot: AnyMachineSnapshot): boolean {
  return snapshot.status !== 'active' || !hasRunningChildren(snapshot);
}

/** Resolve `true` once settled, `false` when the budget ran out first. */
export function settle(actor: AnyActorRef, budgetMs: number): Promise<boolean> {
  if (isSettled(actor.getSnapshot() as AnyMachineSnapshot)) return Promise.resolve(true);
  return new Promise((resolve) => {
    let done = false;
    let subscription: { unsubscribe(): void } | undefined;
    const finish = (settled: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      subscription?.unsubscribe();
      resolve(settled);
    };
    const check = () => {
      if (isSettled(actor.getSnapshot() as AnyMachineSnapshot)) finish(true);
    };
    const timer = setTimeout(() => finish(false), budgetMs);
    subscription = actor.subscribe({ next: check, error: () => finish(true), complete: () => finish(true) });
    if (done) subscription.unsubscribe();
  });
}
