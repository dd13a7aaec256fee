/**
 * One IMAP pass of a check (src/uplink/imap-mailbox.ts opens it): the header blocks of the
 * candidates SEARCH listed, in batches, then the whole messages asked for.
 */
import { MAX_HEADER_BLOCK_BYTES, STAMP_PREFIX_BYTES } from './gates.js';
import { headerEnd } from './raw-headers.js';
import { fetchIsolating, type Fetched, type Session } from './imap-session.js';
import { DEFAULT_MAX_HEADERS, DEFAULT_MAX_PREFIXES, HEADER_BATCH, unreadableMessage, type CheckRequest, type FetchedMessage, type HeaderedMessage, type MailboxError, type MailboxPass } from './mailbox.js';

/** What the SEARCH of a pass found: every UID above `after` it matched, and those not recorded yet. */
export interface Listing {
  uidValidity: string;
  uidValidityChanged: boolean;
  after: number;
  /**
   * Up to where the person's other mail may be passed (src/uplink/imap-mailbox.ts: what this check's
   * SEARCH and the last one's both looked at; `after` when this check ran none): every message up
   * to it that is not in `fresh` is not a candidate.
   */
  through: number;
  /** Every matching UID above the watermark, ascending. */
  fresh: number[];
  /** Those not recorded yet: the candidates, ascending. */
  pending: number[];
}

/** The UIDs a FETCH asks for at most, for whole messages of at most this many bytes together. */
const WHOLE_BATCH = { uids: 50, bytes: 16 * 1024 * 1024 };

/**
 * One IMAP pass: `headers()` fetches `UID FETCH <uids> (UID RFC822.SIZE INTERNALDATE
 * BODY.PEEK[HEADER]<0.16384>)` for the next {@link HEADER_BATCH} candidates, `headerBlocks()` the
 * same with `<0.262144>` for those asked (the header block beyond its prefix), `whole()`
 * `UID FETCH <uids> BODY.PEEK[]` for those asked, in batches of at most {@link WHOLE_BATCH}.
 */
export class ImapPass implements MailboxPass {
  readonly uidValidity: string;
  readonly uidValidityChanged: boolean;
  readonly floor: number;
  bytesFetched = 0;
  /** Candidates handed out so far (an index into `pending`). */
  #next = 0;
  /** Prefixes this pass may read (`maxPrefixes`). */
  readonly #limit: number;
  /** Prefixes read so far, less those given back (`giveBack`); a candidate handed out unread costs none. */
  #read = 0;
  /** Header blocks read beyond their prefix so far (`maxHeaders`). */
  #blocks = 0;
  /** Some were left out by `headerBlocks` (over `maxHeaders`). */
  #left = false;
  #closed = false;
  #failed = false;

  constructor(
    private readonly folder: string,
    private readonly session: Session,
    private readonly reopen: () => Promise<void>,
    private readonly toError: (err: unknown) => MailboxError,
    private readonly req: CheckRequest,
    private readonly source: (uid: number) => string,
    private readonly listing: Listing,
    /** Ends the pass's session: `ok` false after a failure (the connection is then closed, never kept). */
    private readonly release: (ok: boolean) => Promise<void>,
  ) {
    this.uidValidity = listing.uidValidity;
    this.uidValidityChanged = listing.uidValidityChanged;
    const { pending } = listing;
    // Everything up to the first candidate not recorded has a verdict already.
    this.floor = pending.length ? pending[0]! - 1 : this.#last();
    this.#limit = Math.max(0, req.maxPrefixes ?? DEFAULT_MAX_PREFIXES);
  }

  /** The error to throw for `err`; the session is then not kept. */
  private fail(err: unknown): MailboxError {
    this.#failed = true;
    return this.toError(err);
  }

  get more(): boolean {
    return this.#left || this.#next < this.listing.pending.length;
  }

  /** Where the watermark may move once the candidate at `i` (and all before it) has a verdict. */
  #passes(i: number): number {
    const { pending } = this.listing;
    return i + 1 < pending.length ? pending[i + 1]! - 1 : this.#last();
  }

  /** Where the watermark may move once every candidate has a verdict: past the last match, and past the other mail the SEARCH looked at. */
  #last(): number {
    const { fresh, after, through } = this.listing;
    return Math.max(fresh.at(-1) ?? after, through);
  }

  giveBack(count: number): void {
    this.#read = Math.max(0, this.#read - count);
  }

  async headers(): Promise<HeaderedMessage[]> {
    const { pending } = this.listing;
    /** The candidates of this batch by their index in `pending`, and whether each is read. */
    const batch: { i: number; read: boolean }[] = [];
    while (this.#next < pending.length && batch.length < HEADER_BATCH && this.#read < this.#limit) {
      const i = this.#next++;
      const read = !this.req.waits?.(this.source(pending[i]!));
      if (read) this.#read++;
      batch.push({ i, read });
    }
    if (batch.length === 0) return [];
    const uids = batch.filter((b) => b.read).map((b) => pending[b.i]!);
    const { answers, refused } = uids.length ? await this.#heads(uids, STAMP_PREFIX_BYTES) : { answers: new Map<number, Fetched>(), refused: new Map<number, string>() };
    return batch.map(({ i, read }): HeaderedMessage => {
      const uid = pending[i]!;
      // Waits for a later pass (`CheckRequest.waits`): nothing read, no FETCH.
      if (!read) return { uid, source: this.source(uid), passes: this.#passes(i), size: 0, receivedAt: null, head: Buffer.alloc(0), unread: true };
      const m = answers.get(uid);
      const at = m?.internalDate instanceof Date ? m.internalDate.getTime() : Number.NaN;
      const base = { uid, source: this.source(uid), passes: this.#passes(i), size: m?.size ?? 0, receivedAt: Number.isNaN(at) ? null : at };
      const head = this.#head(uid, m, refused.get(uid), 'after SEARCH listed it');
      if (!Buffer.isBuffer(head)) return { ...base, head: Buffer.alloc(0), unreadable: head };
      // No empty line in the prefix read, and the server cut it: the header block runs on.
      return { ...base, head, ...(head.length >= STAMP_PREFIX_BYTES && headerEnd(head) < 0 ? { prefixOnly: true } : {}) };
    });
  }

  async headerBlocks(messages: readonly HeaderedMessage[]): Promise<HeaderedMessage[]> {
    const limit = Math.max(0, this.req.maxHeaders ?? DEFAULT_MAX_HEADERS);
    const take = messages.slice(0, Math.max(0, limit - this.#blocks));
    this.#blocks += take.length;
    if (take.length < messages.length) this.#left = true;
    const out: HeaderedMessage[] = [];
    for (let i = 0; i < take.length; i += HEADER_BATCH) {
      const batch = take.slice(i, i + HEADER_BATCH);
      const { answers, refused } = await this.#heads(batch.map((h) => h.uid), MAX_HEADER_BLOCK_BYTES);
      for (const h of batch) {
        const { prefixOnly: _, ...rest } = h;
        const head = this.#head(h.uid, answers.get(h.uid), refused.get(h.uid), 'after its header block was read');
        out.push(Buffer.isBuffer(head) ? { ...rest, head } : { ...rest, head: Buffer.alloc(0), unreadable: head });
      }
    }
    return out;
  }

  /**
   * `UID FETCH <uids> (UID RFC822.SIZE INTERNALDATE BODY.PEEK[HEADER]<0.maxLength>)`; the UIDs the
   * server refused twice, with their size and date when its index still has them.
   */
  async #heads(uids: number[], maxLength: number): Promise<{ answers: Map<number, Fetched>; refused: Map<number, string> }> {
    const refused = new Map<number, string>();
    const answers = new Map<number, Fetched>();
    try {
      this.session.phase = 'fetch';
      const query = { uid: true, size: true, internalDate: true, bodyParts: [{ key: 'HEADER', maxLength }] };
      for (const [uid, m] of await fetchIsolating(this.session, this.reopen, uids, query, (m) => m.size !== undefined, refused)) answers.set(uid, m);
      // A message the server will not open may still have its size and date in the server's index.
      const meta = await fetchIsolating(this.session, this.reopen, [...refused.keys()], { uid: true, size: true, internalDate: true }, (m) => m.size !== undefined, new Map());
      for (const [uid, m] of meta) answers.set(uid, m);
    } catch (err) {
      throw this.fail(err);
    }
    return { answers, refused };
  }

  /** The header bytes a FETCH answered for `uid` (counted in `bytesFetched`), or why there are none. */
  #head(uid: number, m: Fetched | undefined, why: string | undefined, since: string): Buffer | NonNullable<HeaderedMessage['unreadable']> {
    // The server will not hand this one message over: recorded as such, the rest go on.
    if (why !== undefined) return { reason: 'fetch', detail: `IMAP FETCH of UID ${uid} in ${this.folder} refused twice: ${why}` };
    // Listed, and FETCH finds nothing: expunged meanwhile. It still gets its verdict.
    if (!m) return { reason: 'vanished', detail: `IMAP UID ${uid} in ${this.folder} was expunged ${since}` };
    if (!m.headers) return { reason: 'fetch', detail: `IMAP FETCH of UID ${uid} in ${this.folder} answered without its header block` };
    this.bytesFetched += m.headers.length;
    return m.headers;
  }

  async whole(messages: readonly HeaderedMessage[]): Promise<FetchedMessage[]> {
    const out = new Map<string, FetchedMessage>();
    const asked: HeaderedMessage[] = [];
    for (const h of messages) {
      if (h.prefixOnly || h.unread) throw new Error(`${h.source}: whole() of a candidate ${h.unread ? 'handed out unread' : 'before headerBlocks()'} (a defect)`);
      if (h.unreadable) out.set(h.source, unreadableMessage(h, h.unreadable));
      else if (h.size > this.req.maxMessageBytes) out.set(h.source, this.#message(h, h.head, true));
      else asked.push(h);
    }
    for (let i = 0; i < asked.length; ) {
      const batch: HeaderedMessage[] = [];
      let bytes = 0;
      while (i < asked.length && batch.length < WHOLE_BATCH.uids && (batch.length === 0 || bytes + asked[i]!.size <= WHOLE_BATCH.bytes)) {
        bytes += asked[i]!.size;
        batch.push(asked[i++]!);
      }
      const refused = new Map<number, string>();
      let answers: Map<number, Fetched>;
      try {
        this.session.phase = 'fetch';
        answers = await fetchIsolating(this.session, this.reopen, batch.map((h) => h.uid), { uid: true, source: true }, (m) => !!m.source, refused);
      } catch (err) {
        throw this.fail(err);
      }
      for (const h of batch) {
        const why = refused.get(h.uid);
        const raw = answers.get(h.uid)?.source;
        if (why !== undefined) out.set(h.source, unreadableMessage(h, { reason: 'fetch', detail: `IMAP FETCH of UID ${h.uid} in ${this.folder} refused twice: ${why}` }));
        else if (!raw) out.set(h.source, unreadableMessage(h, { reason: 'vanished', detail: `IMAP UID ${h.uid} in ${this.folder} was expunged after its header block was read` }));
        // The server under-reported RFC822.SIZE: keep the promise of "header block only".
        else if (raw.length > this.req.maxMessageBytes) out.set(h.source, this.#message(h, h.head, true));
        else out.set(h.source, this.#message(h, raw, false));
      }
    }
    return messages.map((h) => out.get(h.source)!);
  }

  #message(h: HeaderedMessage, raw: Buffer, tooLarge: boolean): FetchedMessage {
    if (raw !== h.head) this.bytesFetched += raw.length;
    return { uid: h.uid, source: h.source, raw, size: h.size, tooLarge, receivedAt: h.receivedAt };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.release(!this.#failed);
  }
}
