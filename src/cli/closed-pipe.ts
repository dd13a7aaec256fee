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
 * Any other error of either stream is thrown, as before.
 */
export function endQuietlyOnClosedPipes(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
  process.stderr.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED') return;
    throw err;
  });
}
