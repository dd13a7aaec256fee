/**
 * A library the judge reads mail with (mailparser, libmime, nodemailer's addressparser) could not
 * be loaded — its package missing or being replaced under a running bridge (`npm ci` empties
 * node_modules first) — so the message was not read: a fault of ours, never the mail's. The judge
 * defers the message to the next check and records nothing (src/core/intake.ts, src/core/judge.ts);
 * a header-stage batch fails its check whole, and is judged again on the next.
 */
export class ParserUnavailableError extends Error {
  override readonly name = 'ParserUnavailableError';
}

/**
 * Loads a CommonJS library with `load` on first use (not at start: bench/RESULTS.md, machine-limit).
 * @throws ParserUnavailableError naming `what` when it cannot be loaded
 */
export function loadOnce<T>(what: string, load: () => T): () => T {
  let loaded: T | undefined;
  return () => {
    if (loaded === undefined) {
      try {
        loaded = load();
      } catch (err) {
        throw new ParserUnavailableError(`${what} could not be loaded: ${(err as Error).message}`);
      }
    }
    return loaded;
  };
}
