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
import { imapClient } from './imap-client.js';
import { MailboxError, type CheckRequest, type CheckResult, type FetchedMessage, type Mailbox } from './mailbox.js';
import { imapAuth } from './oauth2.js';

/** `ImapConfig` plus the folder to read (`mailbox.folder` in the config file). */
export interface ImapMailboxConfig extends ImapConfig {
  /** Folder name as the server spells it, e.g. `INBOX` or `INBOX.agents`. */
  folder: string;
}

/** Bytes of the header block fetched for a message over `maxMessageBytes` (a longer header block is cut). */
export const HEADER_BLOCK_CAP_BYTES = 256 * 1024;
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

type Phase = 'connect' | 'login' | 'examine' | 'search' | 'fetch';

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
   * One read-only pass (see the file comment). Messages are returned oldest first, at most
   * `req.maxFetch`; only UIDs above the watermark (above 0 when UIDVALIDITY changed).
   * @throws MailboxError `connect`, `auth`, `tls`, `timeout` or `protocol`; the message never holds the password.
   */
  async check(req: CheckRequest): Promise<CheckResult> {
    const literalCap = Math.max(req.maxMessageBytes, HEADER_BLOCK_CAP_BYTES) + LITERAL_MARGIN_BYTES;
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
    try {
      await session.client.connect();
      session.phase = 'examine';
      const box = await session.client.mailboxOpen(this.folder, { readOnly: true });
      uidValidity = box.uidValidity.toString(10);
      const uidValidityChanged = wm.uidValidity !== null && wm.uidValidity !== uidValidity;
      // Never checked, or the folder was recreated: everything is new (the ledger dedupes).
      const after = wm.uidValidity === uidValidity ? wm.lastUid : 0;
      const result: CheckResult = { uidValidity, uidValidityChanged, messages: [], more: false, bytesFetched: 0 };
      const terms: SearchObject[] = [
        ...req.fromAddresses.map((from) => ({ from })),
        ...req.subjectContains.map((subject) => ({ subject })),
      ];
      // Nothing to narrow on means nothing may be read (the person's other mail is never fetched).
      if (box.exists === 0 || terms.length === 0 || after >= MAX_UID) return await done(session.client, result);

      session.phase = 'search';
      const found = await session.client.search({ uid: `${after + 1}:*`, or: terms }, { uid: true });
      // imapflow answers false when the server refused the SEARCH (NO/BAD): not "nothing matched".
      if (!Array.isArray(found)) throw new MailboxError(`IMAP SEARCH in ${this.folder} was refused by the server`, 'protocol');
      // `UID n:*` matches the highest UID even when it is below n (RFC 3501 §6.4.8; ushahidi #1509).
      const fresh = [...new Set(found)].filter((u) => Number.isInteger(u) && u > after).sort((a, b) => a - b);
      const chosen = fresh.slice(0, Math.max(0, req.maxFetch));
      result.more = fresh.length > chosen.length;
      if (chosen.length === 0) return await done(session.client, result);

      session.phase = 'fetch';
      const refused = new Map<number, string>();
      const sizes = new Map<number, number>();
      const arrived = new Map<number, number>();
      const meta = await fetchIsolating(session, reopen, chosen, { uid: true, size: true, internalDate: true }, (m) => m.size !== undefined, refused);
      for (const m of meta.values()) {
        if (m.size !== undefined) sizes.set(m.uid, m.size);
        const at = m.internalDate instanceof Date ? m.internalDate.getTime() : Number.NaN;
        if (!Number.isNaN(at)) arrived.set(m.uid, at);
      }
      // A UID neither answered nor refused was expunged meanwhile (or not asked for): skipped.
      const present = chosen.filter((u) => sizes.has(u) && !refused.has(u));
      const small = present.filter((u) => sizes.get(u)! <= req.maxMessageBytes);
      const large = present.filter((u) => sizes.get(u)! > req.maxMessageBytes);
      const bodies = new Map<number, Buffer>();
      for (const m of (await fetchIsolating(session, reopen, small, { uid: true, source: true }, (m) => !!m.source, refused)).values()) bodies.set(m.uid, m.source!);
      const headerQuery = { uid: true, bodyParts: [{ key: 'HEADER', maxLength: HEADER_BLOCK_CAP_BYTES }] };
      for (const m of (await fetchIsolating(session, reopen, large, headerQuery, (m) => !!m.headers, refused)).values()) bodies.set(m.uid, m.headers!);

      for (const uid of chosen) {
        const source = `imap:${this.folder}:${uidValidity}:${uid}`;
        const why = refused.get(uid);
        if (why !== undefined) {
          // The server will not hand this one message over: recorded as such, the rest go on.
          const msg: FetchedMessage = { uid, source, raw: Buffer.alloc(0), size: sizes.get(uid) ?? 0, tooLarge: false, receivedAt: arrived.get(uid) ?? null, unreadable: { reason: 'fetch', detail: `IMAP FETCH of UID ${uid} in ${this.folder} refused twice: ${why}` } };
          result.messages.push(msg);
          continue;
        }
        const size = sizes.get(uid);
        let raw = bodies.get(uid);
        if (size === undefined || !raw) continue; // expunged between the FETCHes
        let tooLarge = size > req.maxMessageBytes;
        if (!tooLarge && raw.length > req.maxMessageBytes) {
          // The server under-reported RFC822.SIZE: keep the promise of "header block only".
          tooLarge = true;
          raw = headerBlock(raw);
        }
        result.bytesFetched += raw.length;
        const msg: FetchedMessage = { uid, source, raw, size, tooLarge, receivedAt: arrived.get(uid) ?? null };
        result.messages.push(msg);
      }
      return await done(session.client, result);
    } catch (err) {
      if (err instanceof MailboxError) throw err;
      throw this.#toMailboxError(err as ImapFlowError, session.eventError, session.phase, this.#aborted.has(session.client));
    } finally {
      session.closeAll();
    }
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

/**
 * The connections of one check: normally one; a new one after the server hung up on a FETCH it
 * could not serve (Dovecot answers a message file it cannot open with `BYE FETCH failed`).
 */
class Session {
  phase: Phase = 'connect';
  /** The first 'error' event of the current connection (imapflow #302: a command then rejects with a vaguer NoConnection). */
  eventError: ImapFlowError | undefined;
  readonly #all: ImapFlow[] = [];

  constructor(
    public client: ImapFlow,
    private readonly active: Set<ImapFlow>,
  ) {
    this.#track(client);
  }

  replace(client: ImapFlow): void {
    this.client.close();
    this.eventError = undefined;
    this.client = client;
    this.#track(client);
  }

  #track(client: ImapFlow): void {
    // imapflow #302: without a listener a socket error or timeout is an uncaught 'error' event.
    client.on('error', (err: ImapFlowError) => {
      if (client === this.client) this.eventError ??= err;
    });
    this.#all.push(client);
    this.active.add(client);
  }

  closeAll(): void {
    for (const c of this.#all) {
      c.close();
      this.active.delete(c);
    }
  }
}

/** RFC 5530 response codes that say "not now" rather than "not this message". */
const TRANSIENT_RESPONSE_CODES = new Set(['UNAVAILABLE', 'INUSE', 'LIMIT', 'OVERQUOTA', 'CONTACTADMIN']);

/**
 * Why the server refused a FETCH, when it did: a tagged NO or BAD (not a transient RFC 5530 code,
 * not a throttle), or a BYE. Null for anything else (a timeout, a reset connection): those fail the
 * check as before.
 */
function refusal(err: unknown): string | null {
  const e = err as ImapFlowError;
  if (e?.code === 'ETHROTTLE') return null;
  if (e?.responseStatus === 'NO' || e?.responseStatus === 'BAD') {
    if (TRANSIENT_RESPONSE_CODES.has((e.serverResponseCode ?? '').toUpperCase())) return null;
    return `${e.responseStatus}${e.serverResponseCode ? ` [${e.serverResponseCode}]` : ''} ${e.responseText ?? ''}`.trim();
  }
  if (e?.code === 'NoConnection' && e.reason) return `BYE ${e.reason}`;
  return null;
}

type FetchQuery = Parameters<ImapFlow['fetchAll']>[1];
type Fetched = Awaited<ReturnType<ImapFlow['fetchAll']>>[number];

/**
 * `UID FETCH` of `uids` in one command; when the server refuses it (see `refusal`), each UID alone,
 * so one message the server cannot serve does not hold back the others. A UID refused alone twice
 * (the second time on a fresh connection when the server hung up) goes into `refused` with the
 * server's words. Other failures are thrown.
 *
 * @param has whether an answer holds what was asked for
 * @returns the answers by UID (UIDs already in `refused` are not asked for)
 */
async function fetchIsolating(
  session: Session,
  reopen: () => Promise<void>,
  uids: number[],
  query: FetchQuery,
  has: (m: Fetched) => boolean,
  refused: Map<number, string>,
): Promise<Map<number, Fetched>> {
  const out = new Map<number, Fetched>();
  const asked = uids.filter((u) => !refused.has(u));
  if (asked.length === 0) return out;
  const once = async (set: number[]): Promise<void> => {
    if (!session.client.usable) await reopen();
    // Only answers holding what was asked: an unsolicited FETCH (a flag change by another
    // session) for the same UID must not replace one.
    for (const m of await session.client.fetchAll(set.join(','), query, { uid: true })) if (has(m) && set.includes(m.uid)) out.set(m.uid, m);
  };
  try {
    await once(asked);
    return out;
  } catch (err) {
    if (refusal(err) === null) throw err;
  }
  for (const uid of asked) {
    let why: string | null = null;
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await once([uid]);
        why = null;
        break;
      } catch (err) {
        why = refusal(err);
        if (why === null) throw err;
      }
    }
    if (why !== null) refused.set(uid, why);
  }
  return out;
}

/** LOGOUT politely; a failing LOGOUT does not spoil a finished check (the socket is closed anyway). */
async function done(client: ImapFlow, result: CheckResult): Promise<CheckResult> {
  await client.logout().catch(() => undefined);
  return result;
}

/** The header block of a message: up to and including the first empty line, at most HEADER_BLOCK_CAP_BYTES. */
function headerBlock(raw: Buffer): Buffer {
  const crlf = raw.indexOf('\r\n\r\n');
  const lf = raw.indexOf('\n\n');
  const ends = [crlf >= 0 ? crlf + 4 : -1, lf >= 0 ? lf + 2 : -1].filter((i) => i >= 0);
  const end = ends.length ? Math.min(...ends) : raw.length;
  return raw.subarray(0, Math.min(end, HEADER_BLOCK_CAP_BYTES));
}
