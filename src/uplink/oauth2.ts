/**
 * OAuth2 access tokens for IMAP: Microsoft 365 / Outlook.com accept no password for
 * IMAP, and many Google Workspace accounts cannot use app passwords. The refresh token lives in a
 * 0600 secret file (`mailbox.imap.oauth2_refresh_token_file`, written by `auth login`); the access
 * token is kept in memory only, refreshed before it expires (RFC 6749 §6) and once more after a
 * login the server refused, and never logged. imapflow sends it with SASL XOAUTH2/OAUTHBEARER
 * (RFC 7628) given `auth: { user, accessToken }`.
 */
import { closeSync, constants, fsyncSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { OAuth2Config } from '../config/provider.js';
import { readSecretFile, SecretFileError } from '../config/secret-file.js';
import { MailboxError, readOldest, type CheckRequest, type CheckResult, type Mailbox, type MailboxPass } from './mailbox.js';

/** A token endpoint failure. `revoked`: the grant is gone (invalid_grant); sign in again. */
export class OAuth2Error extends Error {
  override readonly name = 'OAuth2Error';
  constructor(
    message: string,
    readonly kind: 'revoked' | 'connect' | 'protocol',
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The token endpoint's answer (RFC 6749 §5.1), as far as we use it. */
interface TokenResponse {
  access_token?: unknown;
  expires_in?: unknown;
  refresh_token?: unknown;
  error?: unknown;
  error_description?: unknown;
}

/** Refresh when less than this share of the token's lifetime is left, and never later than 60 s before expiry. */
const EARLY_SHARE = 0.1;
const EARLY_MIN_MS = 60_000;
/** Lifetime assumed when the endpoint names none (RFC 6749 §5.1 makes expires_in optional), in ms. */
const DEFAULT_LIFETIME_MS = 3600_000;

/**
 * Writes a secret file the way `readSecretFile` accepts it: mode 0600, created exclusively under a
 * temporary name beside it, fsynced, then renamed over the old one (a reader never sees half).
 */
export function writeSecretFileAtomic(path: string, value: string): void {
  const tmp = join(dirname(path), `.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    writeSync(fd, `${value}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(tmp, path);
  } catch (err) {
    unlinkSync(tmp);
    throw err;
  }
}

/**
 * POSTs a form to a token endpoint and reads the JSON answer.
 * @throws OAuth2Error `connect` when the endpoint cannot be reached, `protocol` for a non-JSON answer
 */
export async function postForm(url: URL, form: Record<string, string>, timeoutMs: number): Promise<{ status: number; body: TokenResponse }> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams(form).toString(),
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'error',
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
    throw new OAuth2Error(`OAuth2 endpoint ${url.origin} could not be reached (${cause})`, 'connect', { cause: err });
  }
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) as TokenResponse };
  } catch {
    throw new OAuth2Error(`OAuth2 endpoint ${url.origin} answered HTTP ${res.status} without JSON`, 'protocol');
  }
}

/**
 * The access token of one grant, shared by every IMAP connection of the process (checks and IDLE).
 * Holds at most one refresh in flight.
 */
export class OAuth2TokenSource {
  readonly #cfg: OAuth2Config;
  readonly #user: string;
  readonly #now: () => number;
  readonly #timeoutMs: number;
  #refreshToken: string | null;
  #access: { token: string; expiresAt: number; refreshAt: number } | null = null;
  #inflight: Promise<string> | null = null;
  /** Refreshes done (for tests and /metrics). */
  refreshes = 0;

  constructor(cfg: OAuth2Config, o: { user: string; now?: () => number; timeoutMs?: number }) {
    this.#cfg = cfg;
    this.#user = o.user;
    this.#now = o.now ?? Date.now;
    this.#timeoutMs = o.timeoutMs ?? 20_000;
    this.#refreshToken = cfg.refreshToken;
  }

  /**
   * A valid access token, refreshed first when it expires soon.
   * @throws OAuth2Error (`revoked` names the command that signs in again)
   */
  async accessToken(): Promise<string> {
    const a = this.#access;
    if (a && this.#now() < a.refreshAt) return a.token;
    this.#inflight ??= this.#refresh().finally(() => {
      this.#inflight = null;
    });
    return this.#inflight;
  }

  /** Forgets the access token (the server refused it); the next `accessToken()` refreshes. */
  invalidate(): void {
    this.#access = null;
  }

  async #refresh(): Promise<string> {
    // The file is read again at each refresh, so a new `auth login` takes effect without a restart.
    try {
      this.#refreshToken = readSecretFile(this.#cfg.refreshTokenFile, 'mailbox.imap.oauth2_refresh_token_file');
    } catch (err) {
      if (!(err instanceof SecretFileError) || this.#refreshToken === null) {
        throw new OAuth2Error(`${err instanceof Error ? err.message : String(err)}; sign in with: ${this.#cfg.login}`, 'revoked', { cause: err });
      }
    }
    const form: Record<string, string> = { grant_type: 'refresh_token', refresh_token: this.#refreshToken, client_id: this.#cfg.clientId };
    if (this.#cfg.clientSecret) form.client_secret = this.#cfg.clientSecret;
    const { status, body } = await postForm(this.#cfg.tokenUrl, form, this.#timeoutMs);
    if (status >= 400 || typeof body.access_token !== 'string' || body.access_token === '') {
      const code = typeof body.error === 'string' ? body.error : `HTTP ${status}`;
      if (code === 'invalid_grant' || code === 'unauthorized_client' || code === 'invalid_client') {
        throw new OAuth2Error(`OAuth2 sign-in for ${this.#user} is no longer valid (${code}: the grant was revoked or has expired); sign in again with: ${this.#cfg.login}`, 'revoked');
      }
      throw new OAuth2Error(`OAuth2 token refresh at ${this.#cfg.tokenUrl.origin} failed (${code})`, 'protocol');
    }
    const lifetime = typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in * 1000 : DEFAULT_LIFETIME_MS;
    const now = this.#now();
    const early = Math.max(EARLY_MIN_MS, lifetime * EARLY_SHARE);
    this.#access = { token: body.access_token, expiresAt: now + lifetime, refreshAt: now + Math.max(0, lifetime - early) };
    this.refreshes += 1;
    // RFC 6749 §6: the server may issue a new refresh token (Microsoft rotates them); keep it.
    if (typeof body.refresh_token === 'string' && body.refresh_token !== '' && body.refresh_token !== this.#refreshToken) {
      writeSecretFileAtomic(this.#cfg.refreshTokenFile, body.refresh_token);
      this.#refreshToken = body.refresh_token;
    }
    return body.access_token;
  }
}

const sources = new WeakMap<OAuth2Config, OAuth2TokenSource>();

/** The one token source of a grant in this process (checks and the IDLE connection share it). */
export function tokenSourceFor(cfg: OAuth2Config, user: string, now?: () => number): OAuth2TokenSource {
  let s = sources.get(cfg);
  if (!s) {
    s = new OAuth2TokenSource(cfg, { user, ...(now ? { now } : {}) });
    sources.set(cfg, s);
  }
  return s;
}

/**
 * What imapflow logs in with: the password, or a fresh access token.
 * @throws MailboxError kind `auth` when the grant is gone, `connect` when the token endpoint is unreachable
 */
export async function imapAuth(c: { user: string; password: string; oauth2?: OAuth2Config }, now?: () => number): Promise<{ user: string; pass: string } | { user: string; accessToken: string }> {
  if (!c.oauth2) return { user: c.user, pass: c.password };
  try {
    return { user: c.user, accessToken: await tokenSourceFor(c.oauth2, c.user, now).accessToken() };
  } catch (err) {
    if (!(err instanceof OAuth2Error)) throw err;
    throw new MailboxError(err.message, err.kind === 'revoked' ? 'auth' : err.kind === 'connect' ? 'connect' : 'protocol', { cause: err });
  }
}

/**
 * A mailbox that, when the IMAP server refuses an OAuth2 login, drops the access token and tries
 * once more with a new one (a token revoked or expired early at the server). A grant that cannot
 * be refreshed fails at once.
 */
export class OAuth2RetryMailbox implements Mailbox {
  readonly kind = 'imap' as const;
  readonly folder: string;
  constructor(
    private readonly inner: Mailbox,
    private readonly tokens: OAuth2TokenSource,
  ) {
    this.folder = inner.folder;
  }

  async open(req: CheckRequest): Promise<MailboxPass> {
    try {
      return await this.inner.open(req);
    } catch (err) {
      if (!(err instanceof MailboxError) || err.kind !== 'auth' || err.cause instanceof OAuth2Error) throw err;
      this.tokens.invalidate();
      return this.inner.open(req);
    }
  }

  check(req: CheckRequest): Promise<CheckResult> {
    return readOldest(this, req);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
