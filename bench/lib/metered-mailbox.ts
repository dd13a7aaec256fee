import type { CheckRequest, CheckResult, Mailbox } from '../../src/uplink/mailbox.js';

/** What the last `check()` of a {@link MeteredMailbox} cost. */
export interface MailboxPass {
  ms: number;
  bytesFetched: number;
  messages: number;
}

/**
 * Wraps a mailbox and records the time and the bytes (`CheckResult.bytesFetched`) of each pass,
 * so a benchmark can tell the IMAP part of a check from the gates and the store.
 */
export class MeteredMailbox implements Mailbox {
  readonly kind: Mailbox['kind'];
  readonly folder: string;
  last: MailboxPass = { ms: 0, bytesFetched: 0, messages: 0 };

  constructor(private readonly inner: Mailbox) {
    this.kind = inner.kind;
    this.folder = inner.folder;
  }

  async check(req: CheckRequest): Promise<CheckResult> {
    const t = performance.now();
    const r = await this.inner.check(req);
    this.last = { ms: performance.now() - t, bytesFetched: r.bytesFetched, messages: r.messages.length };
    return r;
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
