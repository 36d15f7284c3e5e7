/**
 * How the `baton` commands fail: a `CliError` carries one line for stderr and
 * an exit code (2 for usage errors, 1 for everything else), and
 * `reportFailure` prints any thrown value as that one line, never a stack
 * trace, so a bad flag, a short key or an unreachable database reads the
 * same way from every command.
 */

/** Exit code of a command-line usage error. */
export const EXIT_USAGE = 2;
/** Exit code of any other failure. */
export const EXIT_FAILURE = 1;

/** A failure with a one-line message for the user. */
export class CliError extends Error {
  override readonly name = 'CliError';
  readonly exitCode: number;
  constructor(message: string, exitCode = EXIT_FAILURE) {
    super(message);
    this.exitCode = exitCode;
  }
}

/** A usage error: bad or missing flags and arguments. */
export function usageError(message: string, usage?: string): CliError {
  return new CliError(usage ? `${message} (usage: ${usage})` : message, EXIT_USAGE);
}

/** The first line of an error's message (what the user sees). */
export function oneLine(error: unknown): string {
  const message = error instanceof Error ? error.message || error.name : String(error);
  return message.split('\n')[0]!.trim();
}

/** Print `baton: <message>` on stderr and return the exit code to use. */
export function reportFailure(error: unknown): number {
  process.stderr.write(`baton: ${oneLine(error)}\n`);
  return error instanceof CliError ? error.exitCode : EXIT_FAILURE;
}
