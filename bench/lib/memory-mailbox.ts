import type { CheckRequest, CheckResult, FetchedMessage, Mailbox } from '../../src/uplink/mailbox.js';

/**
 * A mailbox held in memory: `check()` hands out the messages above the watermark, at most
 * `maxFetch`, as a real mailbox would — with no I/O, so a benchmark of the per-message work
 * (gates, ledger, promotion) measures only that.
 */
export class MemoryMailbox implements Mailbox {
  readonly kind = 'maildir' as const;
  readonly folder = 'bench-memory';
  readonly #messages: FetchedMessage[] = [];

  /** Appends raw messages with the next UIDs. */
  add(raws: Buffer[], receivedAt = Date.now()): void {
    for (const raw of raws) {
      const uid = this.#messages.length + 1;
      this.#messages.push({ uid, source: `memory:${uid}`, raw, size: raw.length, tooLarge: false, receivedAt });
    }
  }

  check(req: CheckRequest): Promise<CheckResult> {
    const fresh = this.#messages.filter((m) => m.uid > req.watermark.lastUid);
    const messages = fresh.slice(0, req.maxFetch);
    return Promise.resolve({
      uidValidity: '1',
      uidValidityChanged: req.watermark.uidValidity !== null && req.watermark.uidValidity !== '1',
      messages,
      more: fresh.length > messages.length,
      bytesFetched: messages.reduce((n, m) => n + m.raw.length, 0),
    });
  }

  async close(): Promise<void> {}
}
