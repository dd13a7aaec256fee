/**
 * The read-only mailbox, behind one interface for its two kinds: `imap` (imapflow: EXAMINE,
 * narrowed UID SEARCH after the watermark, FETCH with BODY.PEEK, never a flag change) and `maildir`
 * (a local Maildir read without renaming a file or changing a flag).
 *
 * A check is one pass ({@link Mailbox.open}) read in two steps (docs/architecture.md, "The
 * gates"): the header blocks of the candidates, oldest first and in batches, then the whole
 * messages the caller asks for — so mail refused on its header block never costs a body. A
 * mailbox never decides anything about a message: it hands bytes to the gate stack.
 */

/** Where the last check left off. `uidValidity` null means "never checked". */
export interface Watermark {
  uidValidity: string | null;
  /**
   * Highest UID already handed out and recorded. IMAP returns only messages with a greater UID.
   * A Maildir has no UIDs: there it is the newest delivery time (mtime, ms) of a message recorded,
   * for information only; the Maildir reader keys on the file names `isRecorded` knows instead
   * (see maildir-mailbox.ts).
   */
  lastUid: number;
}

export interface CheckRequest {
  watermark: Watermark;
  /**
   * Narrowing (docs/architecture.md, "The gates"): only messages From one of these addresses, or
   * whose Subject contains one of these strings (the `[<TAG>:` prefixes), are fetched. The person's
   * other mail is never read.
   */
  fromAddresses: string[];
  subjectContains: string[];
  /**
   * Whole messages read per check at most (`mailbox.max_fetch_per_check`); `check()` hands out at
   * most this many, the oldest first, and `more` says whether others wait.
   */
  maxFetch: number;
  /**
   * Candidates read per pass at most by the first read of their header block, its first
   * `STAMP_PREFIX_BYTES` (uplink/stamp.ts) (`mailbox.max_prefixes_per_check`; default
   * {@link DEFAULT_MAX_PREFIXES}): IMAP counts the candidates SEARCH listed, a Maildir every file
   * it opens (the narrowing is its own; a file found not ours on its first read counts a quarter). The rest wait for the next pass (`more`).
   * A candidate handed out unread (`waits`) does not count, nor one whose prefix the caller gives
   * back ({@link MailboxPass.giveBack}).
   */
  maxPrefixes?: number;
  /**
   * Header blocks read per pass at most beyond their first `STAMP_PREFIX_BYTES`
   * ({@link MailboxPass.headerBlocks}; `mailbox.max_headers_per_check`; default
   * {@link DEFAULT_MAX_HEADERS}). The rest wait for the next pass (`more`).
   */
  maxHeaders?: number;
  /** Messages larger than this, in bytes, are returned with `tooLarge` and their header block only. */
  maxMessageBytes: number;
  /**
   * Whether a source key was recorded already: such a message is not read again (IMAP: a UID
   * after the watermark recorded while an older one waits; Maildir: every name, as it has no UIDs).
   */
  isRecorded?: (source: string) => boolean;
  /**
   * Whether a candidate not recorded waits for a later pass: it is handed out in its place with
   * `unread` and nothing read of it — no prefix of `maxPrefixes` spent, no byte read — so the
   * caller's watermark stays before it. Asked once per candidate a pass reaches, and must be O(1):
   * the bridge answers from its deferrals (src/core/deferrals.ts, at most `DEFER_MAX_KEPT` sources
   * answered true), which bounds the unread candidates of a pass.
   */
  waits?: (source: string) => boolean;
  /** Maildir: where the names found not ours are kept across restarts (see {@link NotOursRecord}). */
  notOurs?: NotOursRecord;
}

/**
 * The record of a Maildir's files the narrowing found not ours (the store's `maildir_not_ours`), so
 * a restart does not open them again (docs/architecture.md, "The header stage"). `key` names what
 * the names were judged under: the folder's UIDVALIDITY and the narrowing's addresses and tags.
 */
export interface NotOursRecord {
  /** The names kept under `key`; any kept under another key are dropped. */
  load(key: string): Iterable<string>;
  /** Adds `add` and drops `drop` (files no longer in the folder) under `key`, in one transaction. */
  save(key: string, add: readonly string[], drop: readonly string[]): void;
}

/** Header blocks read whole per pass, beyond their prefix, when the request names no `maxHeaders`. */
export const DEFAULT_MAX_HEADERS = 10_000;
/** Candidates read by their prefix per pass when the request names no `maxPrefixes`. */
export const DEFAULT_MAX_PREFIXES = 25_000;
/** Header blocks a pass hands out at a time (one FETCH; the caller records each batch in one transaction). */
export const HEADER_BATCH = 100;

/**
 * Why a message the folder holds could not be read (a per-message failure, never the mailbox's):
 * `permission` — the file cannot be opened (EACCES, EPERM); `vanished` — it was deleted between
 * reading its header block and reading it whole; `io` — another read error of that one file (EIO);
 * `fetch` — the IMAP server refused to FETCH that one message (NO, or BYE, twice).
 */
export const UNREADABLE_REASONS = ['permission', 'vanished', 'io', 'fetch'] as const;
export type UnreadableReason = (typeof UNREADABLE_REASONS)[number];

export interface FetchedMessage {
  /** IMAP UID (strictly greater than the watermark's lastUid), or the Maildir file's mtime in ms. */
  uid: number;
  /** Unique, stable key of this copy for the ledger (`imap:<folder>:<uidvalidity>:<uid>`, `maildir:<dir>:<name>`). */
  source: string;
  /** The exact bytes of the message (for `tooLarge`, the header block only). */
  raw: Buffer;
  /** Size of the whole message in bytes, as the server reports it. */
  size: number;
  tooLarge: boolean;
  /** When the mailbox received it, ms since the epoch (IMAP INTERNALDATE, Maildir mtime); null if unknown. */
  receivedAt: number | null;
  /**
   * Set when this message could not be read: the caller records it (verdict `unreadable:<reason>`)
   * and goes on with the rest. `raw` then holds what was read (the header block of a message that
   * vanished after it was read), often nothing.
   */
  unreadable?: { reason: UnreadableReason; detail: string };
}

/** A candidate as the header step of a pass reads it: where it is, its size, and its header block. */
export interface HeaderedMessage {
  /** IMAP UID, or the Maildir file's mtime in ms (clamped to now). */
  uid: number;
  /** The ledger's key of this copy (see {@link FetchedMessage}). */
  source: string;
  /**
   * The header block as read: up to and including the empty line that ends it (IMAP:
   * `BODY.PEEK[HEADER]`); the first `MAX_HEADER_BLOCK_BYTES` (uplink/gates.ts) when it runs on; the
   * whole message when it has no empty line. Empty when unreadable. With `prefixOnly`, only the
   * block's first `STAMP_PREFIX_BYTES` (uplink/stamp.ts).
   */
  head: Buffer;
  /**
   * `head` is the first read of a header block that runs on past it: its first
   * `STAMP_PREFIX_BYTES`, no empty line among them. {@link MailboxPass.headerBlocks} reads the rest.
   */
  prefixOnly?: boolean;
  /** Size of the whole message in bytes. */
  size: number;
  receivedAt: number | null;
  /**
   * Where the watermark may move once this message, and every candidate handed out before it, has
   * a verdict: up to just before the next candidate not recorded (IMAP), or this message's uid (a
   * Maildir, whose watermark is for information only).
   */
  passes: number;
  /** The mailbox lists it but could not read its header block (as in {@link FetchedMessage}). */
  unreadable?: { reason: UnreadableReason; detail: string };
  /**
   * Handed out without a read because the request says it waits (`CheckRequest.waits`): `head` is
   * empty, `size` what the listing knows (IMAP: 0), and neither `headerBlocks` nor `whole` may be
   * asked for it.
   */
  unread?: boolean;
}

/** One read-only pass over the folder (see the file comment): opened by {@link Mailbox.open}. */
export interface MailboxPass {
  readonly uidValidity: string;
  /** True when the folder's UIDVALIDITY differs from the watermark's: the folder is read from UID 1. */
  readonly uidValidityChanged: boolean;
  /** Where the watermark may move before any message of this pass is recorded (every candidate up to it is). */
  readonly floor: number;
  /**
   * The header blocks of the next candidates not recorded yet, oldest first, at most
   * {@link HEADER_BATCH} (those handed out `unread` among them); an empty array once the pass's
   * candidates within `maxPrefixes` are handed out.
   * @throws MailboxError as {@link Mailbox.open}
   */
  headers(): Promise<HeaderedMessage[]>;
  /**
   * Gives back to this pass's `maxPrefixes` the prefixes of `count` candidates it handed out read
   * that the caller leaves for a later pass without a verdict (a check's held mail: src/core/mail-check.ts):
   * the pass may read as many more. The caller bounds how many it gives back.
   */
  giveBack(count: number): void;
  /**
   * The candidates handed out by {@link headers} as the first read of a header block left them
   * (`prefixOnly`), with the header block as far as the second read takes it (to
   * `MAX_HEADER_BLOCK_BYTES`), in the order given: as many as `maxHeaders` allows this pass, the
   * first ones first (the rest are left out and wait for the next pass: `more`). One the mailbox
   * cannot read any more comes back `unreadable`.
   * @throws MailboxError as {@link Mailbox.open}
   */
  headerBlocks(messages: readonly HeaderedMessage[]): Promise<HeaderedMessage[]>;
  /**
   * The whole messages of candidates handed out by {@link headers} (one with `prefixOnly` after
   * {@link headerBlocks}: a defect otherwise), in the order given: one over
   * `maxMessageBytes` (or that the server under-reported) with `tooLarge` and its header block; one
   * the mailbox cannot hand over with `unreadable` (`vanished` when it was deleted since its header
   * block was read, `fetch`, `permission`, `io`).
   * @throws MailboxError as {@link Mailbox.open}
   */
  whole(messages: readonly HeaderedMessage[]): Promise<FetchedMessage[]>;
  /** Candidates wait that this pass has not handed out (beyond `maxHeaders`, or not yet read). */
  readonly more: boolean;
  /** Message bytes transferred by this pass so far (for the benchmarks). */
  readonly bytesFetched: number;
  /** Maildir: files this pass opened so far (each counted against `maxPrefixes`). */
  readonly filesOpened?: number;
  /**
   * Maildir: files this pass found not ours so far — their header block names no agent's address
   * and no tag — so they get no ledger row (as IMAP SEARCH does not list them) but are counted.
   */
  readonly notOurs?: number;
  /** Ends the pass (IMAP: LOGOUT, the socket closed); idempotent, never throws. */
  close(): Promise<void>;
}

export interface CheckResult {
  uidValidity: string;
  /** True when the folder's UIDVALIDITY differs from the watermark's: the folder was rescanned from UID 1. */
  uidValidityChanged: boolean;
  /** Ascending by uid (Maildir: by mtime, then unique name); unreadable ones in their place. */
  messages: FetchedMessage[];
  /** More matching messages are waiting beyond `maxFetch`. */
  more: boolean;
  /** Message bytes transferred by this check (for the benchmarks). */
  bytesFetched: number;
}

export interface Mailbox {
  readonly kind: 'imap' | 'maildir';
  /** The key of this folder in the `mailbox_state` table. */
  readonly folder: string;
  /**
   * Opens one read-only pass over the folder: the candidates after the watermark (IMAP) or not
   * recorded (Maildir), narrowed to `fromAddresses`/`subjectContains`. A message that cannot be
   * read is handed out with `unreadable` set; it never fails the pass. The caller must `close()` it.
   * @throws MailboxError for connection, login, TLS, timeout and protocol failures, and for a
   *   folder that cannot be listed.
   */
  open(req: CheckRequest): Promise<MailboxPass>;
  /**
   * One pass that hands out the oldest `req.maxFetch` candidates whole ({@link readOldest}): what
   * `doctor` and the readers' own tests use. A bridge's check reads header blocks first
   * (src/core/mail-check.ts).
   * @throws MailboxError as {@link open}
   */
  check(req: CheckRequest): Promise<CheckResult>;
  /** Releases any connection; idempotent. */
  close(): Promise<void>;
}

/** A mailbox failure with a short, secret-free message fit for a caller's status text and /health. */
export class MailboxError extends Error {
  override readonly name = 'MailboxError';
  constructor(
    message: string,
    /** `connect`, `auth`, `tls`, `timeout`, `protocol`, `answer-too-large` (an IMAP answer over the client's size limits: imap-too-large.ts) or `io`. */
    readonly kind: 'connect' | 'auth' | 'tls' | 'timeout' | 'protocol' | 'answer-too-large' | 'io',
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * `Mailbox.check` for any mailbox: one pass ({@link Mailbox.open}) handing out its oldest
 * `req.maxFetch` candidates whole, unreadable ones in their place.
 * @throws MailboxError as `Mailbox.open`
 */
export async function readOldest(box: Pick<Mailbox, 'open'>, req: CheckRequest): Promise<CheckResult> {
  const pass = await box.open(req);
  try {
    const heads: HeaderedMessage[] = [];
    while (heads.length < req.maxFetch) {
      const batch = await pass.headers();
      if (batch.length === 0) break;
      heads.push(...batch);
    }
    const first = heads.slice(0, Math.max(0, req.maxFetch));
    const blocks = new Map((await pass.headerBlocks(first.filter((h) => h.prefixOnly))).map((h) => [h.source, h]));
    const chosen = first.flatMap((h) => (h.unread ? [] : !h.prefixOnly ? [h] : (blocks.get(h.source) ?? [])));
    const read = await pass.whole(chosen.filter((h) => !h.unreadable));
    const bySource = new Map(read.map((m) => [m.source, m]));
    const messages: FetchedMessage[] = [];
    for (const h of chosen) {
      const m = h.unreadable ? unreadableMessage(h, h.unreadable) : bySource.get(h.source);
      if (m) messages.push(m);
    }
    return { uidValidity: pass.uidValidity, uidValidityChanged: pass.uidValidityChanged, messages, more: pass.more || heads.length > chosen.length, bytesFetched: pass.bytesFetched };
  } finally {
    await pass.close();
  }
}

/** A candidate handed over as unreadable: what was read of it (its header block, often nothing) and why. */
export function unreadableMessage(h: HeaderedMessage, why: { reason: UnreadableReason; detail: string }): FetchedMessage {
  return { uid: h.uid, source: h.source, raw: h.head, size: h.size, tooLarge: false, receivedAt: h.receivedAt, unreadable: why };
}
