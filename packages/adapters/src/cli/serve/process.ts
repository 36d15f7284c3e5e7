/**
 * What `baton serve` does to its own process: SIGINT and SIGTERM become a promise (the listeners
 * removed on the way out), and over stdio, stdout is kept for the transport while whatever else
 * prints there (`console.log`, an inspector module) goes to stderr.
 */

/**
 * SIGINT and SIGTERM while `baton serve` runs. The listeners are removed on the way out (a failed
 * start-up included), so a later Ctrl-C is never swallowed by a listener of a finished command.
 */
export function listenForSignals(): { signalled: Promise<NodeJS.Signals>; dispose(): void } {
  let onSignal: (signal: NodeJS.Signals) => void = () => {};
  const signalled = new Promise<NodeJS.Signals>((resolve) => {
    onSignal = resolve;
  });
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    signalled,
    dispose() {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

/**
 * Send what is printed to stdout (`console.log`, `info`, `debug`, `process.stdout.write`) to
 * stderr instead, and return a stdout for the transport alone (the real one, writing with the
 * original `write`), and how to undo it.
 */
export function guardStdout(): { stdout: NodeJS.WriteStream; restore: () => void } {
  const out = process.stdout;
  const originalWrite = out.write;
  const write = originalWrite.bind(out);
  const consoleMethods = { log: console.log, info: console.info, debug: console.debug };
  out.write = ((chunk: unknown, ...rest: unknown[]) =>
    (process.stderr.write as (...args: unknown[]) => boolean)(chunk, ...rest)) as typeof out.write;
  console.log = console.info = console.debug = (...args: unknown[]) => console.error(...args);
  const stdout = new Proxy(out, {
    get(target, property) {
      if (property === 'write') return write;
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return {
    stdout,
    restore() {
      out.write = originalWrite;
      Object.assign(console, consoleMethods);
    },
  };
}
