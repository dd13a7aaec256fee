/**
 * The IMAP mailbox (docs/architecture.md, "The gates"): one read-only pass per `check()`, over
 * imapflow.
 *
 * Per check: a new ImapFlow (an instance cannot reconnect) with an `error` listener (imapflow #302:
 * an unhandled socket timeout kills the process) → connect and log in →
 * `EXAMINE <folder>` (never SELECT) → compare UIDVALIDITY with the watermark → one narrowed
 * `UID SEARCH UID <after+1>:* (OR FROM … SUBJECT …)` → `UID FETCH (RFC822.SIZE)` of the chosen
 * UIDs → `UID FETCH BODY.PEEK[]` for those within the size cap and `BODY.PEEK[HEADER]<0.256K>` for
 * larger ones → LOGOUT; the socket is closed in `finally`. Nothing else is sent: no STORE, COPY,
 * MOVE, EXPUNGE, and no flag changes (`\Seen` stays as it was because every body fetch is PEEK).
 * Every FETCH is collected whole (`fetchAll`) before the next command (imapflow #159: a command
 * issued inside `for await` over `fetch()` deadlocks).
 *
 * One message the server cannot serve never holds back the folder: when a FETCH is refused (a
 * tagged NO/BAD, or a BYE — Dovecot hangs up on a message file it cannot open), each UID is fetched
 * alone, on a fresh connection when needed; a UID refused twice is returned `unreadable: fetch`
 * and the caller records it and moves the watermark past it. A timeout or a dropped connection
 * still fails the whole check (nothing is recorded; the next check tries again).
 */
import type { ImapFlow, ImapFlowError, Logger, SearchObject } from 'imapflow';
import type { ImapConfig } from '../config/config.js';
import { MAX_HEADER_BLOCK_BYTES } from './gates.js';
import { imapClient } from './imap-client.js';
import { fetchIsolating, Session, type Fetched, type Phase } from './imap-session.js';
import {
  DEFAULT_MAX_HEADERS,
  HEADER_BATCH,
  MailboxError,
  readOldest,
  unreadableMessage,
  type CheckRequest,
  type CheckResult,
  type FetchedMessage,
  type HeaderedMessage,
  type Mailbox,
  type MailboxPass,
} from './mailbox.js';
import { imapAuth } from './oauth2.js';

/** `ImapConfig` plus the folder to read (`mailbox.folder` in the config file). */
export interface ImapMailboxConfig extends ImapConfig {
  /** Folder name as the server spells it, e.g. `INBOX` or `INBOX.agents`. */
  folder: string;
}

/** Room on top of the largest literal we ask for, before imapflow refuses a literal (bytes). */
const LITERAL_MARGIN_BYTES = 64 * 1024;
/** Longest response line accepted, in bytes; a SEARCH answer of many UIDs is one line. */
const MAX_LINE_BYTES = 16 * 1024 * 1024;
const MAX_UID = 4294967295; // RFC 3501 §2.3.1.1: UIDs are 32-bit unsigned

/** Node/socket error codes that mean the server could not be reached. */
const CONNECT_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EADDRNOTAVAIL', 'EPIPE',
  'NoConnection', 'EConnectionClosed', 'ClosedAfterConnectText', 'ProxyError', 'EPROXY',
]);
const TIMEOUT_CODES = new Set(['CONNECT_TIMEOUT', 'GREETING_TIMEOUT', 'UPGRADE_TIMEOUT', 'ETIMEOUT', 'ETIMEDOUT']);

/**
 * Reads one IMAP folder, read-only. Holds no connection between checks.
 *
 * `tls: true` is implicit TLS (port 993). `tls: false` (allowed by the config for loopback only)
 * is plain text and never tries STARTTLS: local IMAP bridges offer STARTTLS with self-signed
 * certificates that would fail verification.
 */
export class ImapMailbox implements Mailbox {
  readonly kind = 'imap' as const;
  readonly folder: string;
  readonly #config: ImapMailboxConfig;
  readonly #logger: Logger | false;
  readonly #active = new Set<ImapFlow>();
  /** Connections that `close()` cut: their check fails with "aborted", not a network error. */
  readonly #aborted = new WeakSet<ImapFlow>();

  /**
   * @param config server, credentials, folder and `timeoutMs` (used for connecting, for the
   *   greeting, and as the socket inactivity limit of every command).
   * @param logger an imapflow logger (pino-like: `debug`, `info`, `warn`, `error`); it sees every
   *   command sent (entries with `src: 'c'`, credentials masked). Default: no logging.
   */
  constructor(config: ImapMailboxConfig, logger?: Logger) {
    this.#config = config;
    this.folder = config.folder;
    this.#logger = logger ?? false;
  }

  /**
   * Opens one read-only pass (see the file comment): connects, EXAMINEs the folder, and lists the
   * candidates — UIDs above the watermark (above 0 when UIDVALIDITY changed) that SEARCH matched
   * and `req.isRecorded` does not know — oldest first. The connection stays open until the pass is
   * closed.
   * @throws MailboxError `connect`, `auth`, `tls`, `timeout` or `protocol`; the message never holds the password.
   */
  async open(req: CheckRequest): Promise<MailboxPass> {
    const literalCap = Math.max(req.maxMessageBytes, MAX_HEADER_BLOCK_BYTES) + LITERAL_MARGIN_BYTES;
    // The password, or an OAuth2 access token (src/uplink/oauth2.ts); a grant that is gone fails here with kind `auth`.
    const auth = await imapAuth(this.#config);
    const session = new Session(this.#client(literalCap, auth), this.#active);
    const wm = req.watermark;
    let uidValidity = '';
    /** Opens a fresh connection after the server hung up on a FETCH; the folder must be the same. */
    const reopen = async (): Promise<void> => {
      session.replace(this.#client(literalCap, auth));
      await session.client.connect();
      const box = await session.client.mailboxOpen(this.folder, { readOnly: true });
      if (box.uidValidity.toString(10) !== uidValidity) throw new MailboxError(`IMAP UIDVALIDITY of ${this.folder} changed during the check`, 'protocol');
    };
    const fail = (err: unknown): MailboxError =>
      err instanceof MailboxError ? err : this.#toMailboxError(err as ImapFlowError, session.eventError, session.phase, this.#aborted.has(session.client));
    try {
      await session.client.connect();
      session.phase = 'examine';
      const box = await session.client.mailboxOpen(this.folder, { readOnly: true });
      uidValidity = box.uidValidity.toString(10);
      const uidValidityChanged = wm.uidValidity !== null && wm.uidValidity !== uidValidity;
      // Never checked, or the folder was recreated: everything is new (the ledger dedupes).
      const after = wm.uidValidity === uidValidity ? wm.lastUid : 0;
      const terms: SearchObject[] = [
        ...req.fromAddresses.map((from) => ({ from })),
        ...req.subjectContains.map((subject) => ({ subject })),
      ];
      const source = (uid: number): string => `imap:${this.folder}:${uidValidity}:${uid}`;
      const listing = { uidValidity, uidValidityChanged, after, fresh: [] as number[], pending: [] as number[] };
      // Nothing to narrow on means nothing may be read (the person's other mail is never fetched).
      if (box.exists > 0 && terms.length > 0 && after < MAX_UID) {
        session.phase = 'search';
        const found = await session.client.search({ uid: `${after + 1}:*`, or: terms }, { uid: true });
        // imapflow answers false when the server refused the SEARCH (NO/BAD): not "nothing matched".
        if (!Array.isArray(found)) throw new MailboxError(`IMAP SEARCH in ${this.folder} was refused by the server`, 'protocol');
        // `UID n:*` matches the highest UID even when it is below n (RFC 3501 §6.4.8; ushahidi #1509).
        listing.fresh = [...new Set(found)].filter((u) => Number.isInteger(u) && u > after).sort((a, b) => a - b);
        // A UID recorded while an older one waited (its body beyond the last check's budget) is not read again.
        let n = 0;
        for (const u of listing.fresh) {
          if (!req.isRecorded?.(source(u))) listing.pending.push(u);
          if (++n % 1000 === 0) await new Promise<void>((resolve) => setImmediate(resolve));
        }
      }
      return new ImapPass(this.folder, session, reopen, fail, req, source, listing);
    } catch (err) {
      session.closeAll();
      throw fail(err);
    }
  }

  /** One pass handing out the oldest `req.maxFetch` candidates whole (mailbox.ts `readOldest`). */
  check(req: CheckRequest): Promise<CheckResult> {
    return readOldest(this, req);
  }

  /** A new imapflow client for one connection (an instance cannot reconnect). */
  #client(literalCap: number, auth: Awaited<ReturnType<typeof imapAuth>>): ImapFlow {
    return imapClient(this.#config, auth, {
      logger: this.#logger,
      disableAutoIdle: true,
      socketTimeout: this.#config.timeoutMs,
      maxLiteralSize: literalCap,
      maxResponseSize: literalCap + MAX_LINE_BYTES,
      maxLineLength: MAX_LINE_BYTES,
    });
  }

  /**
   * Cuts the connection of any running check (that check then fails with kind `connect`); idempotent.
   * The mailbox stays usable: a later `check()` opens a new connection.
   */
  close(): Promise<void> {
    for (const c of this.#active) {
      this.#aborted.add(c);
      c.close();
    }
    this.#active.clear();
    return Promise.resolve();
  }

  /** Maps an imapflow failure to a short, password-free MailboxError. */
  #toMailboxError(err: ImapFlowError, eventError: ImapFlowError | undefined, phase: Phase, aborted: boolean): MailboxError {
    const { host, port, user, timeoutMs } = this.#config;
    const where = `${host}:${port}`;
    const code = err?.code ?? '';
    const eventCode = eventError?.code ?? '';
    const make = (message: string, kind: MailboxError['kind']): MailboxError =>
      new MailboxError(this.#redact(message), kind, { cause: err });

    // imapflow's AuthenticationFailure sets authenticationFailed (and imapflow loads lazily: imap-client.ts).
    if (err?.authenticationFailed) {
      return make(`IMAP login failed for ${user}`, 'auth');
    }
    if (TIMEOUT_CODES.has(code) || TIMEOUT_CODES.has(eventCode)) {
      return make(`IMAP server ${where} did not answer within ${timeoutMs} ms (${phase})`, 'timeout');
    }
    if (err?.tlsFailed || eventError?.tlsFailed || /^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|ClosedAfterConnectTLS)/.test(code)) {
      return make(`IMAP TLS with ${where} failed: ${tlsReason(err, eventError)}`, 'tls');
    }
    if (aborted) return make('IMAP check aborted: the mailbox was closed', 'connect');
    if (CONNECT_CODES.has(code) || (phase === 'connect' && CONNECT_CODES.has(eventCode))) {
      const cause = CONNECT_CODES.has(eventCode) && !CONNECT_CODES.has(code) ? eventCode : code;
      const during = phase === 'connect' ? '' : ` during ${phase}`;
      return make(`IMAP connection to ${where} failed${during}: ${cause}`, 'connect');
    }
    if (err?.mailboxMissing) return make(`IMAP folder ${this.folder} does not exist on ${where}`, 'protocol');
    const text = err?.responseText || err?.message || String(err);
    return make(`IMAP ${phase} failed: ${code ? `${code}: ` : ''}${text}`, 'protocol');
  }

  /** Belt and braces: a server could echo the password into a response text. */
  #redact(message: string): string {
    const pw = this.#config.password;
    return pw.length >= 4 ? message.split(pw).join('***') : message;
  }
}

/**
 * One readable line for a TLS failure. OpenSSL messages look like
 * `805C…:error:0A00010B:SSL routines:ssl3_get_record:wrong version number:../deps/…:350:\n`; the
 * reason is the fifth colon-separated field. The Node code (ERR_SSL_…) is added when known.
 */
function tlsReason(err: ImapFlowError | undefined, eventError: ImapFlowError | undefined): string {
  const source = [err, eventError].find((e) => e?.message || e?.code);
  const message = (source?.message ?? '').trim();
  const openssl = /:error:[0-9A-F]+:[^:]*:[^:]*:([^:\n]+)/.exec(message);
  const reason = (openssl?.[1] ?? message.split('\n')[0] ?? '').replace(/\s+/g, ' ').trim();
  const code = source?.code && source.code !== reason ? source.code : '';
  return [reason || 'handshake failed', code && `(${code})`].filter(Boolean).join(' ');
}

/** What the SEARCH of a pass found: every UID above `after` it matched, and those not recorded yet. */
interface Listing {
  uidValidity: string;
  uidValidityChanged: boolean;
  after: number;
  /** Every matching UID above the watermark, ascending. */
  fresh: number[];
  /** Those not recorded yet: the candidates, ascending. */
  pending: number[];
}

/** The UIDs a FETCH asks for at most, for whole messages of at most this many bytes together. */
const WHOLE_BATCH = { uids: 50, bytes: 16 * 1024 * 1024 };

/**
 * One IMAP pass: `headers()` fetches `UID FETCH <uids> (UID RFC822.SIZE INTERNALDATE
 * BODY.PEEK[HEADER]<0.262144>)` for the next {@link HEADER_BATCH} candidates, `whole()`
 * `UID FETCH <uids> BODY.PEEK[]` for those asked, in batches of at most {@link WHOLE_BATCH}.
 */
class ImapPass implements MailboxPass {
  readonly uidValidity: string;
  readonly uidValidityChanged: boolean;
  readonly floor: number;
  bytesFetched = 0;
  /** Candidates handed out so far (an index into `pending`). */
  #next = 0;
  /** Candidates this pass may hand out (`maxHeaders`). */
  readonly #limit: number;
  #closed = false;

  constructor(
    private readonly folder: string,
    private readonly session: Session,
    private readonly reopen: () => Promise<void>,
    private readonly fail: (err: unknown) => MailboxError,
    private readonly req: CheckRequest,
    private readonly source: (uid: number) => string,
    private readonly listing: Listing,
  ) {
    this.uidValidity = listing.uidValidity;
    this.uidValidityChanged = listing.uidValidityChanged;
    const { pending, fresh, after } = listing;
    // Everything up to the first candidate not recorded has a verdict already.
    this.floor = pending.length ? pending[0]! - 1 : (fresh.at(-1) ?? after);
    this.#limit = Math.min(pending.length, Math.max(0, req.maxHeaders ?? DEFAULT_MAX_HEADERS));
  }

  get more(): boolean {
    return this.#next < this.listing.pending.length;
  }

  /** Where the watermark may move once the candidate at `i` (and all before it) has a verdict. */
  #passes(i: number): number {
    const { pending, fresh, after } = this.listing;
    return i + 1 < pending.length ? pending[i + 1]! - 1 : (fresh.at(-1) ?? after);
  }

  async headers(): Promise<HeaderedMessage[]> {
    const from = this.#next;
    const uids = this.listing.pending.slice(from, Math.min(this.#limit, from + HEADER_BATCH));
    if (uids.length === 0) return [];
    this.#next = from + uids.length;
    const refused = new Map<number, string>();
    const answers = new Map<number, Fetched>();
    try {
      this.session.phase = 'fetch';
      const query = { uid: true, size: true, internalDate: true, bodyParts: [{ key: 'HEADER', maxLength: MAX_HEADER_BLOCK_BYTES }] };
      for (const [uid, m] of await fetchIsolating(this.session, this.reopen, uids, query, (m) => m.size !== undefined, refused)) answers.set(uid, m);
      // A message the server will not open may still have its size and date in the server's index.
      const meta = await fetchIsolating(this.session, this.reopen, [...refused.keys()], { uid: true, size: true, internalDate: true }, (m) => m.size !== undefined, new Map());
      for (const [uid, m] of meta) answers.set(uid, m);
    } catch (err) {
      throw this.fail(err);
    }
    return uids.map((uid, k): HeaderedMessage => {
      const m = answers.get(uid);
      const at = m?.internalDate instanceof Date ? m.internalDate.getTime() : Number.NaN;
      const base = { uid, source: this.source(uid), passes: this.#passes(from + k), size: m?.size ?? 0, receivedAt: Number.isNaN(at) ? null : at };
      const why = refused.get(uid);
      // The server will not hand this one message over: recorded as such, the rest go on.
      if (why !== undefined) return { ...base, head: Buffer.alloc(0), unreadable: { reason: 'fetch', detail: `IMAP FETCH of UID ${uid} in ${this.folder} refused twice: ${why}` } };
      // SEARCH listed it, FETCH finds nothing: expunged meanwhile. It still gets its verdict.
      if (!m) return { ...base, head: Buffer.alloc(0), unreadable: { reason: 'vanished', detail: `IMAP UID ${uid} in ${this.folder} was expunged after SEARCH listed it` } };
      if (!m.headers) return { ...base, head: Buffer.alloc(0), unreadable: { reason: 'fetch', detail: `IMAP FETCH of UID ${uid} in ${this.folder} answered without its header block` } };
      this.bytesFetched += m.headers.length;
      return { ...base, head: m.headers };
    });
  }

  async whole(messages: readonly HeaderedMessage[]): Promise<FetchedMessage[]> {
    const out = new Map<string, FetchedMessage>();
    const asked: HeaderedMessage[] = [];
    for (const h of messages) {
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
    // LOGOUT politely; a failing LOGOUT does not spoil a finished pass (the socket is closed anyway).
    await this.session.client.logout().catch(() => undefined);
    this.session.closeAll();
  }
}
