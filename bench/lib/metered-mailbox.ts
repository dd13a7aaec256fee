import { readOldest, type CheckRequest, type CheckResult, type Mailbox, type MailboxPass } from '../../src/uplink/mailbox.js';

/** What the last pass of a {@link MeteredMailbox} cost. */
export interface PassCost {
  /** Time spent in the mailbox (opening, header blocks, whole messages, closing), in ms. */
  ms: number;
  bytesFetched: number;
  /** Messages handed out (header blocks). */
  messages: number;
}

/**
 * Wraps a mailbox and records the time and the bytes (`MailboxPass.bytesFetched`) of each pass,
 * so a benchmark can tell the IMAP part of a check from the gates and the store.
 */
export class MeteredMailbox implements Mailbox {
  readonly kind: Mailbox['kind'];
  readonly folder: string;
  last: PassCost = { ms: 0, bytesFetched: 0, messages: 0 };

  constructor(private readonly inner: Mailbox) {
    this.kind = inner.kind;
    this.folder = inner.folder;
  }

  async open(req: CheckRequest): Promise<MailboxPass> {
    const cost: PassCost = { ms: 0, bytesFetched: 0, messages: 0 };
    this.last = cost;
    const timed = async <T>(p: () => Promise<T>): Promise<T> => {
      const t = performance.now();
      try {
        return await p();
      } finally {
        cost.ms += performance.now() - t;
      }
    };
    const pass = await timed(() => this.inner.open(req));
    return {
      uidValidity: pass.uidValidity,
      uidValidityChanged: pass.uidValidityChanged,
      floor: pass.floor,
      get more() {
        return pass.more;
      },
      get bytesFetched() {
        return pass.bytesFetched;
      },
      headers: () =>
        timed(async () => {
          const b = await pass.headers();
          cost.messages += b.length;
          return b;
        }),
      giveBack: (count) => pass.giveBack(count),
      headerBlocks: (m) => timed(() => pass.headerBlocks(m)),
      whole: (m) => timed(() => pass.whole(m)),
      close: () =>
        timed(async () => {
          await pass.close();
          cost.bytesFetched = pass.bytesFetched;
        }),
    };
  }

  check(req: CheckRequest): Promise<CheckResult> {
    return readOldest(this, req);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
