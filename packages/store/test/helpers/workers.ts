/**
 * Forking TypeScript worker processes (`node --import tsx`) for the race and
 * crash tests, with bounded waits: every wait has a timeout and every child
 * is killed when the test ends, whatever happened.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';

const storeRoot = fileURLToPath(new URL('../../', import.meta.url));
const live = new Set<ChildProcess>();

afterEach(() => {
  for (const child of live) child.kill('SIGKILL');
  live.clear();
});

/** Fork `test/workers/<script>` with `args`; stderr is passed through for diagnosis. */
export function forkWorker(script: string, args: string[]): ChildProcess {
  const child = fork(fileURLToPath(new URL(`../workers/${script}`, import.meta.url)), args, {
    cwd: storeRoot,
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

/** The next IPC message from `child` matching `accept`, or a rejection after `timeoutMs` or on exit. */
export function nextMessage<T>(child: ChildProcess, accept: (message: any) => boolean, timeoutMs = 60_000): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(
      () => finish(new Error(`no message from worker ${child.pid} in ${timeoutMs} ms`)),
      timeoutMs,
    );
    const onMessage = (message: any) => {
      if (message?.type === 'error') finish(new Error(`worker ${child.pid} failed: ${message.message}`));
      else if (accept(message)) finish(undefined, message as T);
    };
    const onExit = (code: number | null, signal: string | null) =>
      finish(new Error(`worker ${child.pid} exited (code ${code}, signal ${signal}) before the expected message`));
    function finish(error: Error | undefined, value?: T) {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
      if (error) reject(error);
      else resolve(value as T);
    }
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

/** Resolves when `child` has exited (or after `timeoutMs`, killing it). */
export function exited(child: ChildProcess, timeoutMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
    }, timeoutMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
