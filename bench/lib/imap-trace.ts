/**
 * Times the IMAP commands of a mailbox check from imapflow's log (the `logger` an `ImapMailbox`
 * takes: it sees every command sent, `src: 'c'`, and every response line, `src: 's'`). A command
 * lasts from its line to the tagged OK/NO/BAD with the same tag.
 */
export class ImapTrace {
  #open = new Map<string, { verb: string; at: number }>();
  /** Milliseconds per command verb (`EXAMINE`, `UID SEARCH`, …) since the last `reset()`. */
  spent = new Map<string, number>();

  reset(): void {
    this.#open.clear();
    this.spent = new Map();
  }

  #entry = (e: unknown): void => {
    const { src, msg } = (e ?? {}) as { src?: string; msg?: unknown };
    if (typeof msg !== 'string') return;
    if (src === 'c') {
      const m = /^(\S+) (UID \S+|[A-Z]+)/.exec(msg);
      if (m && !this.#open.has(m[1]!)) this.#open.set(m[1]!, { verb: m[2]!, at: performance.now() });
    } else if (src === 's') {
      const m = /^(\S+) (?:OK|NO|BAD)\b/.exec(msg);
      const open = m ? this.#open.get(m[1]!) : undefined;
      if (open) {
        this.spent.set(open.verb, (this.spent.get(open.verb) ?? 0) + performance.now() - open.at);
        this.#open.delete(m![1]!);
      }
    }
  };

  /** The logger object to hand to `new ImapMailbox(config, logger)`. */
  readonly logger = { debug: this.#entry, info: this.#entry, trace: this.#entry, warn: (): void => {}, error: (): void => {}, fatal: (): void => {} };
}
