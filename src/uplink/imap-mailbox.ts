/**
 * The IMAP mailbox (docs/architecture.md, "The gates"): one read-only pass per `check()`, over
 * imapflow.
 *
 * Per check: a new ImapFlow (an instance cannot reconnect) with an `error` listener (imapflow #302:
 * an unhandled socket timeout kills the process) → connect and log in →
 * `EXAMINE <folder>` (never SELECT) → compare UIDVALIDITY with the watermark → one narrowed
 * `UID SEARCH UID <after+1>:* (OR FROM … SUBJECT …)` (in windows of UIDs in a folder of over a
 * million messages, so no answer passes the line limit: src/uplink/imap-search.ts) → the header blocks of the candidates, then
 * `UID FETCH BODY.PEEK[]` of those the header stage let through (src/uplink/imap-pass.ts) →
 * LOGOUT; the socket is closed in `finally`. With `keepSession` (serve) the session stays open
 * instead (CLOSE: no folder selected), and the next check starts with `STATUS <folder>
 * (UIDVALIDITY UIDNEXT)` on it — no connect, login or EXAMINE, whose cost grows with the folder —
 * and EXAMINEs and SEARCHes only when UIDNEXT says something came above the watermark. After any
 * error, and {@link RECONNECT_EVERY_MS} after it connected, a check connects afresh. Nothing else is sent: no STORE, COPY,
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
import { missingFolderMessage } from './imap-folders.js';
import { ImapPass } from './imap-pass.js';
import { MAX_UID, searchAbove } from './imap-search.js';
import { Session, type Phase } from './imap-session.js';
import { MailboxError, readOldest, type CheckRequest, type CheckResult, type Mailbox, type MailboxPass } from './mailbox.js';
import { imapAuth } from './oauth2.js';
import { CONNECT_CODES, connectCause, TIMEOUT_CODES, TLS_CODE } from './imap-codes.js';
import { tooLargeError, tooLargeMessage } from './imap-too-large.js';
import { monotonicMs } from '../monotonic.js';

/** `ImapConfig` plus the folder to read (`mailbox.folder` in the config file). */
export interface ImapMailboxConfig extends ImapConfig {
  /** Folder name as the server spells it, e.g. `INBOX` or `INBOX.agents`. */
  folder: string;
}

/** Room on top of the largest literal we ask for, before imapflow refuses a literal (bytes). */
const LITERAL_MARGIN_BYTES = 64 * 1024;
/** Longest response line accepted, in bytes; a SEARCH answer of many UIDs is one line. */
const MAX_LINE_BYTES = 16 * 1024 * 1024;


/**
 * How long one connection is kept at most (`keepSession`), in ms: then a check connects, logs in
 * and EXAMINEs the folder afresh. Between, a check with nothing new costs one STATUS, whatever the
 * folder holds; UIDVALIDITY is compared on every check either way.
 */
export const RECONNECT_EVERY_MS = 10 * 60_000;

/** A session kept open between checks, in the authenticated state (no folder selected). */
interface Kept {
  session: Session;
  /** When it connected (clock of the mailbox, ms). */
  connectedAt: number;
  /** The literal cap its client was made with (it follows `maxMessageBytes`). */
  literalCap: number;
}

/** LOGOUT when the connection is still usable (a failing LOGOUT changes nothing), then close every connection of the session. */
async function endSession(session: Session): Promise<void> {
  if (session.client.usable) await session.client.logout().catch(() => undefined);
  session.closeAll();
}

/** Options of {@link ImapMailbox}. */
export interface ImapMailboxOptions {
  /**
   * Keep the session open between checks (serve; src/app.ts): the next check resumes it with a
   * STATUS instead of connecting, logging in and EXAMINEing again. imapflow closes a session left
   * idle longer than `timeoutMs` (its socket inactivity limit), so this saves the most when checks
   * come at least that often. Default false: every pass logs out (one-shot commands).
   */
  keepSession?: boolean;
  /** The clock of {@link RECONNECT_EVERY_MS}, ms (default {@link monotonicMs}). */
  now?: () => number;
  /** UIDs one SEARCH answer may hold at most (default imap-search.ts `SEARCH_WINDOW_UIDS`; a test's seam). */
  searchWindow?: number;
}

/**
 * Reads one IMAP folder, read-only. Holds no connection between checks unless `keepSession`.
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
  readonly #keep: boolean;
  readonly #now: () => number;
  readonly #searchWindow: number | undefined;
  #kept: Kept | null = null;
  /** The folder's UIDVALIDITY and UIDNEXT − 1 at the last check that SEARCHed it (in memory: a restart SEARCHes twice first). */
  #searched: { uidValidity: string; below: number } | null = null;
  /** Advanced by close(): a pass opened before it does not keep its session. */
  #epoch = 0;

  /**
   * @param config server, credentials, folder and `timeoutMs` (used for connecting, for the
   *   greeting, and as the socket inactivity limit of every command).
   * @param logger an imapflow logger (pino-like: `debug`, `info`, `warn`, `error`); it sees every
   *   command sent (entries with `src: 'c'`, credentials masked). Default: no logging.
   */
  constructor(config: ImapMailboxConfig, logger?: Logger, o: ImapMailboxOptions = {}) {
    this.#config = config;
    this.folder = config.folder;
    this.#logger = logger ?? false;
    this.#keep = o.keepSession === true;
    this.#now = o.now ?? monotonicMs;
    this.#searchWindow = o.searchWindow;
  }

  /**
   * Opens one read-only pass (see the file comment) and lists the candidates — UIDs above the
   * watermark (above 0 when UIDVALIDITY changed) that SEARCH matched and `req.isRecorded` does not
   * know — oldest first. On a new connection: EXAMINE. On the kept one (`keepSession`): STATUS
   * first, and EXAMINE only when UIDNEXT says something came above the watermark. The connection
   * stays open until the pass is closed; then it is kept for the next check, or logged out.
   * @throws MailboxError `connect`, `auth`, `tls`, `timeout`, `protocol` or `answer-too-large` (an answer over
   *   the client's size limits: src/uplink/imap-too-large.ts); the message never holds the password.
   */
  async open(req: CheckRequest): Promise<MailboxPass> {
    const literalCap = Math.max(req.maxMessageBytes, MAX_HEADER_BLOCK_BYTES) + LITERAL_MARGIN_BYTES;
    const kept = await this.#resume(literalCap);
    // The password, or an OAuth2 access token (src/uplink/oauth2.ts); a grant that is gone fails here with kind `auth`.
    let auth = kept ? undefined : await imapAuth(this.#config);
    const session = kept?.session ?? new Session(this.#client(literalCap, auth!), this.#active);
    const epoch = this.#epoch;
    const connectedAt = kept?.connectedAt ?? this.#now();
    let uidValidity = '';
    /**
     * Opens a fresh connection after the server hung up on a FETCH; the folder must be the same.
     * Whatever stops it fails the check as a MailboxError, never as the server's refusal of the
     * message being fetched (imap-session.ts `refusal`): a NO to the EXAMINE was taken for one, the
     * FETCH retried on a connection with no folder open, and the check ended "NoMailboxSelected".
     */
    const reopen = async (): Promise<void> => {
      try {
        auth ??= await imapAuth(this.#config);
        session.replace(this.#client(literalCap, auth));
        await session.client.connect();
        session.phase = 'examine';
        const box = await this.#openFolder(session.client);
        if (box.uidValidity.toString(10) !== uidValidity) throw new MailboxError(`IMAP UIDVALIDITY of ${this.folder} changed during the check`, 'protocol');
        session.phase = 'fetch';
      } catch (err) {
        throw fail(err);
      }
    };
    const fail = (err: unknown): MailboxError =>
      err instanceof MailboxError ? err : this.#toMailboxError(err as ImapFlowError, session.eventError, session.phase, this.#aborted.has(session.client));
    /**
     * Keeps the session for the next check, back in the authenticated state (CLOSE after EXAMINE
     * removes nothing, RFC 3501 §6.4.2), when asked to, the pass went well and close() did not
     * come meanwhile; else logs out.
     */
    const release = async (ok: boolean): Promise<void> => {
      if (ok && this.#keep && epoch === this.#epoch && session.client.usable && !this.#kept) {
        const closed = session.client.mailbox ? await session.client.mailboxClose().catch(() => false) : true;
        if (closed && session.client.usable && epoch === this.#epoch && !this.#kept) {
          session.forgetReplaced();
          this.#kept = { session, connectedAt, literalCap };
          return;
        }
      }
      await endSession(session);
    };
    try {
      const wm = req.watermark;
      let examined: { exists: number; below: number } | null = null;
      if (kept) {
        uidValidity = kept.uidValidity;
        const after = wm.uidValidity === uidValidity ? wm.lastUid : 0;
        if (kept.uidNext - 1 > after) examined = await this.#examine(session, (v) => (uidValidity = v));
      } else {
        await session.client.connect();
        examined = await this.#examine(session, (v) => (uidValidity = v));
      }
      const exists = examined?.exists ?? 0;
      const uidValidityChanged = wm.uidValidity !== null && wm.uidValidity !== uidValidity;
      // Never checked, or the folder was recreated: everything is new (the ledger dedupes).
      const after = wm.uidValidity === uidValidity ? wm.lastUid : 0;
      const terms: SearchObject[] = [
        ...req.fromAddresses.map((from) => ({ from })),
        ...req.subjectContains.map((subject) => ({ subject })),
      ];
      const source = (uid: number): string => `imap:${this.folder}:${uidValidity}:${uid}`;
      const listing = { uidValidity, uidValidityChanged, after, through: after, fresh: [] as number[], pending: [] as number[] };
      // Nothing to narrow on means nothing may be read (the person's other mail is never fetched).
      if (exists > 0 && terms.length > 0 && after < MAX_UID) {
        session.phase = 'search';
        // In windows when the folder is large, so no answer passes the line limit (imap-search.ts).
        const { found, top } = await searchAbove(session.client, after, this.folder, { exists, below: examined?.below ?? 0, terms, window: this.#searchWindow });
        // `UID n:*` matches the highest UID even when it is below n (RFC 3501 §6.4.8; ushahidi #1509).
        listing.fresh = [...new Set(found)].filter((u) => Number.isInteger(u) && u > after).sort((a, b) => a - b);
        // The person's other mail is passed by the watermark once two SEARCHes, this check's and
        // the last one's, looked at it (every UID up to what the last EXAMINE counted): else every
        // check EXAMINEd and SEARCHed all of it again (attack review 8). Not on one SEARCH alone: a
        // server whose search index lags could miss a message that just arrived.
        // Nothing above `top` was searched yet: the next check's.
        const below = Math.min(examined?.below ?? 0, top);
        const before = this.#searched?.uidValidity === uidValidity ? this.#searched.below : 0;
        listing.through = Math.max(after, Math.min(below, before));
        this.#searched = { uidValidity, below };
        // A UID recorded while an older one waited (its body beyond the last check's budget) is not read again.
        let n = 0;
        for (const u of listing.fresh) {
          if (!req.isRecorded?.(source(u))) listing.pending.push(u);
          if (++n % 1000 === 0) await new Promise<void>((resolve) => setImmediate(resolve));
        }
      }
      return new ImapPass(this.folder, session, reopen, fail, req, source, listing, release);
    } catch (err) {
      session.closeAll();
      throw fail(err);
    }
  }

  /**
   * `EXAMINE <folder>` (never SELECT): hands its UIDVALIDITY to `set`.
   * @returns the message count, and the highest UID the folder can hold now (UIDNEXT − 1; 0 when
   *   the server sends no UIDNEXT): every message a SEARCH after it may miss has a higher one
   */
  async #examine(session: Session, set: (uidValidity: string) => void): Promise<{ exists: number; below: number }> {
    session.phase = 'examine';
    const box = await this.#openFolder(session.client);
    set(box.uidValidity.toString(10));
    const next = Number(box.uidNext);
    return { exists: box.exists, below: Number.isInteger(next) && next > 1 ? Math.min(next - 1, MAX_UID) : 0 };
  }

  /**
   * `EXAMINE <folder>` on `client`: a check's first connection and the one it opens after the
   * server hung up. A missing folder is a MailboxError `protocol` listing the folders there, so the
   * fix can be spelled as the server does (src/uplink/imap-folders.ts); a MailboxError is no FETCH
   * refusal (imap-session.ts), so after a hang-up it fails the check as it is.
   * @throws MailboxError for a missing folder; imapflow's error for anything else
   */
  async #openFolder(client: ImapFlow): Promise<Awaited<ReturnType<ImapFlow['mailboxOpen']>>> {
    try {
      return await client.mailboxOpen(this.folder, { readOnly: true });
    } catch (err) {
      if (!(err as ImapFlowError)?.mailboxMissing) throw err;
      throw new MailboxError(this.#redact(await missingFolderMessage(client, this.folder, this.#config)), 'protocol', { cause: err });
    }
  }

  /**
   * The kept session, when there is one this check may use — opened for the same literal cap,
   * less than {@link RECONNECT_EVERY_MS} ago, still connected — with the folder's UIDVALIDITY and
   * UIDNEXT from `STATUS` (RFC 3501 §6.3.10; UIDNEXT is above every UID in the folder,
   * §2.3.1.1). The session holds no folder selected, so the server answers for the folder as it
   * is now: one deleted and created again shows its new UIDVALIDITY at once (with the folder
   * selected, Dovecot answers from the session's view). Anything else, or any error, ends it: the
   * check then connects and EXAMINEs afresh.
   */
  async #resume(literalCap: number): Promise<(Kept & { uidValidity: string; uidNext: number }) | null> {
    const k = this.#kept;
    this.#kept = null;
    if (!k) return null;
    if (k.literalCap !== literalCap || !k.session.client.usable || this.#now() - k.connectedAt >= RECONNECT_EVERY_MS) {
      await endSession(k.session);
      return null;
    }
    try {
      k.session.phase = 'examine';
      const st = await k.session.client.status(this.folder, { uidValidity: true, uidNext: true });
      if (!st || st.uidValidity === undefined || typeof st.uidNext !== 'number' || !k.session.client.usable) throw new Error('no STATUS');
      return { ...k, uidValidity: st.uidValidity.toString(10), uidNext: st.uidNext };
    } catch {
      k.session.closeAll();
      return null;
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
  async close(): Promise<void> {
    this.#epoch++;
    const k = this.#kept;
    this.#kept = null;
    if (k) {
      this.#active.delete(k.session.client);
      await endSession(k.session);
    }
    for (const c of this.#active) {
      this.#aborted.add(c);
      c.close();
    }
    this.#active.clear();
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
    if (err?.tlsFailed || eventError?.tlsFailed || TLS_CODE.test(code)) {
      return make(`IMAP TLS with ${where} failed: ${tlsReason(err, eventError)}`, 'tls');
    }
    if (aborted) return make('IMAP check aborted: the mailbox was closed', 'connect');
    // The command then rejects with NoConnection; the 'error' event has the cause (imapflow #302).
    const large = tooLargeError(err, eventError);
    if (large) return make(tooLargeMessage(large, phase, where, this.folder), 'answer-too-large');
    if (CONNECT_CODES.has(code) || (phase === 'connect' && CONNECT_CODES.has(eventCode))) {
      const cause = CONNECT_CODES.has(eventCode) && !CONNECT_CODES.has(code) ? eventCode : code;
      const during = phase === 'connect' ? '' : ` during ${phase}`;
      return make(`IMAP connection to ${where} failed${during}: ${connectCause(cause)}`, 'connect');
    }
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

