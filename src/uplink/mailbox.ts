/**
 * The read-only mailbox, behind one interface for its two kinds: `imap` (imapflow: EXAMINE,
 * narrowed UID SEARCH after the watermark, FETCH with BODY.PEEK, never a flag change) and `maildir`
 * (a local Maildir read without renaming a file or changing a flag).
 *
 * A mailbox never decides anything about a message: it hands raw bytes to the gate stack.
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
  /** At most this many messages per check (the oldest first); `more` says whether others wait. */
  maxFetch: number;
  /** Messages larger than this, in bytes, are returned with `tooLarge` and their header block only. */
  maxMessageBytes: number;
  /**
   * Whether a source key was recorded already. Used by kinds without UIDs (Maildir) to hand out
   * each message exactly once; IMAP ignores it.
   */
  isRecorded?: (source: string) => boolean;
}

/**
 * Why a message the folder holds could not be read (a per-message failure, never the mailbox's):
 * `permission` — the file cannot be opened (EACCES, EPERM); `vanished` — it was deleted between
 * reading its header block and reading it whole; `io` — another read error of that one file (EIO);
 * `fetch` — the IMAP server refused to FETCH that one message (NO, or BYE, twice).
 */
export type UnreadableReason = 'permission' | 'vanished' | 'io' | 'fetch';

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
   * One read-only pass over the folder. A message that cannot be read is returned with
   * `unreadable` set; it never fails the pass.
   * @throws MailboxError for connection, login, TLS, timeout and protocol failures, and for a
   *   folder that cannot be listed.
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
    /** `connect`, `auth`, `tls`, `timeout`, `protocol` or `io`. */
    readonly kind: 'connect' | 'auth' | 'tls' | 'timeout' | 'protocol' | 'io',
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
