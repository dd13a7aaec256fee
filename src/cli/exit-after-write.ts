/**
 * Writes `text` to stderr, then exits with `code` once the write is done: `process.exit` right
 * after a write to a pipe cuts what the pipe has not taken yet (a config error read through a pipe
 * ended mid-line at 131 KB, attack review 2, 2026-12-02). Exits even when the write fails (EPIPE).
 */
export function exitAfterWrite(text: string, code: number): void {
  process.stderr.write(text, () => process.exit(code));
}
