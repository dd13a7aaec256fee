/**
 * A reader that stops early closes the pipe (`a2a-mailbridge tasks | head -1`, or with `2>&1` the
 * same pipe for both streams): every later write to it fails with EPIPE. Other Unix tools end
 * quietly then (SIGPIPE, which Node ignores); so does the CLI, for every command:
 *
 * - EPIPE on stdout: the process exits at once with status 0, writing nothing more (what was
 *   printed is what the reader wanted);
 * - EPIPE on stderr (or a write after it, `ERR_STREAM_DESTROYED`): ignored, as nothing more can be
 *   said there, and the command ends with its own status. Unhandled, it was an uncaught 'error'
 *   event: `service install --dry-run 2>&1 | head -1` exited 1 where the dry run meant 0.
 *
 * Any other error of either stream is thrown, as before. A command that holds something to undo
 * (`demo`'s temporary folder of secrets) registers it with {@link whenStdoutCloses}: the exit then
 * waits for it, and takes the status it returns.
 */
export function endQuietlyOnClosedPipes(): void {
  let closing = false;
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
    // Every later write fails too: the first one decides.
    if (closing) return;
    closing = true;
    if (undoers.size === 0) process.exit(0);
    // Bounded: an undo still running after UNDO_WAIT_MS ends the process with status 1.
    setTimeout(() => process.exit(1), UNDO_WAIT_MS).unref();
    void Promise.allSettled([...undoers].map((u) => u())).then((done) => {
      const codes = done.map((d) => (d.status === 'fulfilled' ? d.value : 1));
      process.exit(Math.max(0, ...codes));
    });
  });
  process.stderr.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED') return;
    throw err;
  });
}

/** How long the exit on a closed stdout waits for the undoers, in ms. */
const UNDO_WAIT_MS = 10_000;

/** What must be undone before the process exits on a closed stdout; each resolves with the exit status it asks for. */
const undoers = new Set<() => Promise<number>>();

/**
 * Registers `undo` to run before the exit on a closed stdout (see {@link endQuietlyOnClosedPipes});
 * the process then exits with the highest status the undoers give (1 for one that fails).
 * @returns the function that unregisters it
 */
export function whenStdoutCloses(undo: () => Promise<number>): () => void {
  undoers.add(undo);
  return () => void undoers.delete(undo);
}
