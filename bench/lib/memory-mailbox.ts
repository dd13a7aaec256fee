import { MAX_HEADER_BLOCK_BYTES, STAMP_PREFIX_BYTES } from '../../src/uplink/gates.js';
import {
  DEFAULT_MAX_HEADERS,
  DEFAULT_MAX_PREFIXES,
  HEADER_BATCH,
  readOldest,
  type CheckRequest,
  type CheckResult,
  type FetchedMessage,
  type HeaderedMessage,
  type Mailbox,
  type MailboxPass,
} from '../../src/uplink/mailbox.js';
import { headerEnd } from '../../src/uplink/raw-headers.js';

/**
 * A mailbox held in memory: a pass hands out the messages above the watermark — their header
 * blocks, then whole what is asked for — as a real mailbox would, with no I/O, so a benchmark of
 * the per-message work (gates, ledger, promotion) measures only that.
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

  open(req: CheckRequest): Promise<MailboxPass> {
    const fresh = this.#messages.filter((m) => m.uid > req.watermark.lastUid && !req.isRecorded?.(m.source));
    let limit = Math.min(fresh.length, req.maxPrefixes ?? DEFAULT_MAX_PREFIXES);
    let blocks = Math.max(0, req.maxHeaders ?? DEFAULT_MAX_HEADERS);
    let left = false;
    const byUid = new Map(this.#messages.map((m) => [m.uid, m]));
    let next = 0;
    let bytes = 0;
    const last = this.#messages.at(-1)?.uid ?? req.watermark.lastUid;
    return Promise.resolve({
      uidValidity: '1',
      uidValidityChanged: req.watermark.uidValidity !== null && req.watermark.uidValidity !== '1',
      floor: fresh.length ? fresh[0]!.uid - 1 : last,
      get more() {
        return left || next < fresh.length;
      },
      get bytesFetched() {
        return bytes;
      },
      giveBack: (count: number) => {
        limit = Math.min(fresh.length, limit + count);
      },
      headers: () => {
        const batch = fresh.slice(next, Math.min(limit, next + HEADER_BATCH));
        const from = next;
        next += batch.length;
        return Promise.resolve(
          batch.map((m, k): HeaderedMessage => {
            const end = headerEnd(m.raw, STAMP_PREFIX_BYTES);
            const runsOn = end < 0 && m.raw.length > STAMP_PREFIX_BYTES;
            const head = end < 0 ? m.raw.subarray(0, STAMP_PREFIX_BYTES) : m.raw.subarray(0, end);
            bytes += head.length;
            const after = fresh[from + k + 1];
            return { uid: m.uid, source: m.source, head, size: m.size, receivedAt: m.receivedAt, passes: after ? after.uid - 1 : last, ...(runsOn ? { prefixOnly: true } : {}) };
          }),
        );
      },
      headerBlocks: (messages) => {
        const take = messages.slice(0, blocks);
        blocks -= take.length;
        if (take.length < messages.length) left = true;
        return Promise.resolve(
          take.map((h): HeaderedMessage => {
            const raw = byUid.get(h.uid)!.raw;
            const end = headerEnd(raw, MAX_HEADER_BLOCK_BYTES);
            const head = end < 0 ? raw.subarray(0, MAX_HEADER_BLOCK_BYTES) : raw.subarray(0, end);
            bytes += head.length;
            const { prefixOnly: _, ...rest } = h;
            return { ...rest, head };
          }),
        );
      },
      whole: (messages) =>
        Promise.resolve(
          messages.map((h) => {
            const m = byUid.get(h.uid)!;
            const tooLarge = m.size > req.maxMessageBytes;
            bytes += tooLarge ? 0 : m.raw.length;
            return { ...m, raw: tooLarge ? h.head : m.raw, tooLarge };
          }),
        ),
      close: () => Promise.resolve(),
    });
  }

  check(req: CheckRequest): Promise<CheckResult> {
    return readOldest(this, req);
  }

  async close(): Promise<void> {}
}
