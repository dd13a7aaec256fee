/**
 * The two ways a command ends badly, by exit code (main.ts prints the message without a stack):
 * {@link UsageError} — the command line is wrong (exit 2, like a config error); {@link CliFailure}
 * — the operation could not be done or a check failed (exit 1).
 */

/** A bad argument or option value; the message says what a valid one looks like. Exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** The operation was refused or failed (a file exists, no such task…); the message names the fix. Exit code 1. */
export class CliFailure extends Error {
  override readonly name = 'CliFailure';
}
