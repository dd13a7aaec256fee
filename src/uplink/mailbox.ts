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
   * Highest UID already handed out and recorded. IMAP returns only messages with a greater UID;
   * a Maildir, which has no UIDs, re-reads a short window below it and skips what `isRecorded`
   * says was recorded (see maildir-mailbox.ts).
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
   * Whether a source key was recorded already. Used by kinds without stable UIDs (Maildir) to
   * skip messages they cannot order strictly; IMAP ignores it.
   */
  isRecorded?: (source: string) => boolean;
}

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
}

export interface CheckResult {
  uidValidity: string;
  /** True when the folder's UIDVALIDITY differs from the watermark's: the folder was rescanned from UID 1. */
  uidValidityChanged: boolean;
  /** Ascending by uid. */
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
   * One read-only pass over the folder.
   * @throws MailboxError for connection, login, TLS, timeout and protocol failures.
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
