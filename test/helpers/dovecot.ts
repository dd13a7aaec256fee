/**
 * A private Dovecot 2.3 for integration tests:
 * `dovecot -F -c <conf>` in the foreground on 127.0.0.1 and a free port, `ssl = no`, a static
 * passdb and userdb, a Maildir, `base_dir`, `state_dir` and the log file all under one temp dir.
 *
 * Root and non-root (the two ways CI and people run the suite):
 * - as root, mail processes must not run as uid 0 (Dovecot refuses, and it would be unsafe):
 *   the mail user is `nobody`, the internal and login users are the `dovecot`/`dovenull` users
 *   Debian's package creates (`nobody` when they are missing); the home is chowned to `nobody`
 *   and the temp dir made traversable (0711);
 * - as anyone else, Dovecot cannot switch users, so every user and group setting is the current
 *   user and its primary group (`default_internal_group` too: the unix listeners are chowned to
 *   it, and an unprivileged process may chown only to its own groups).
 * Either way `first_valid_uid`/`last_valid_uid` (and gid) allow exactly the one mail uid.
 *
 * Clean-up: Dovecot runs under a small `sh` guard, in a process group of its own. `stop()` kills
 * the group, waits until none of it runs and removes the temp dir; an `exit` hook does the same
 * for every Dovecot still running when the test process exits. A test process killed outright
 * (SIGKILL) runs no hook, but its end closes the guard's stdin, and the guard then stops Dovecot
 * and removes the dir. So a crashed run leaves no Dovecot behind.
 *
 * Mail is delivered with IMAP APPEND (imapflow), which stores the given bytes. Dovecot's Maildir
 * keeps LF line ends on disk and hands CRLF back on FETCH, so give CRLF messages when byte
 * equality matters.
 */
import type { ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { config, identity, oauth2Config } from './dovecot-config.js';
import { imapHelpers } from './dovecot-imap.js';
import { findDovecot, readLog, spawnGuarded, stopGroup, waitReady } from './dovecot-process.js';
import { freePort } from './free-port.js';

export { findDovecot } from './dovecot-process.js';

export interface DovecotOptions {
  /** Login name (any name works: the passdb is static). Default `mailbridge`. */
  user?: string;
  /** Default `test-password`. */
  password?: string;
  /** How long to wait for the greeting, in ms. Default 15000. */
  startTimeoutMs?: number;
  /**
   * Mail storage format. Default `maildir` (one file per message, under `maildir`). `mdbox` keeps
   * many messages per file, so a folder of 100,000 messages is written in seconds (the fault
   * suite's big-folder test); `maildir` in the handle then names an absent directory.
   */
  mailFormat?: 'maildir' | 'mdbox';
  /**
   * Also accept OAuth2 logins (SASL XOAUTH2 and OAUTHBEARER) through Dovecot's `oauth2` passdb,
   * which asks this token introspection endpoint (RFC 7662, POST `token=<access token>`) and
   * accepts an answer `{ "active": true, "username": <user> }`. Password logins keep working.
   */
  oauth2?: { introspectionUrl: string };
}

export interface DovecotHandle {
  host: '127.0.0.1';
  port: number;
  user: string;
  password: string;
  /** The temp dir holding config, state, log and home; removed by `stop()`. */
  dir: string;
  /** The user's Maildir (created by Dovecot at the first login). */
  maildir: string;
  /** Dovecot's log file. */
  logPath: string;
  /**
   * Appends one message with IMAP APPEND (bytes kept as given) to `folder` (default INBOX).
   * @returns its UID (from UIDPLUS APPENDUID).
   */
  append(raw: Buffer | string, opts?: { folder?: string; flags?: string[] }): Promise<number>;
  /** Creates a folder (no error when it exists). */
  createFolder(name: string): Promise<void>;
  /** Deletes a folder and its messages. Recreating it afterwards gives it a new UIDVALIDITY. */
  deleteFolder(name: string): Promise<void>;
  /**
   * The stored flags of one message, sorted, without the per-session `\Recent`; read with
   * EXAMINE + FETCH FLAGS, so reading changes nothing.
   */
  flagsOf(uid: number, folder?: string): Promise<string[]>;
  /** The folder's UIDVALIDITY (STATUS). */
  uidValidity(folder?: string): Promise<bigint>;
  /** Kills the whole process tree and removes the temp dir; idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts a private Dovecot. Several may run at once (each has its own port and dir).
 *
 * @throws Error when the binary is missing (says `apt-get install dovecot-imapd`), or when Dovecot
 *   exits or does not greet within `startTimeoutMs`; the error holds its stderr and log.
 */
export async function startDovecot(opts: DovecotOptions = {}): Promise<DovecotHandle> {
  const bin = findDovecot();
  const user = opts.user ?? 'mailbridge';
  const password = opts.password ?? 'test-password';
  if (!/^[A-Za-z0-9._-]+$/.test(password)) throw new Error('startDovecot: the password must be [A-Za-z0-9._-] (it goes into a config line)');
  const id = identity();
  const dir = mkdtempSync(join(tmpdir(), 'mb-dovecot-'));
  const home = join(dir, 'home');
  mkdirSync(join(dir, 'run'));
  mkdirSync(join(dir, 'state'));
  mkdirSync(home);
  if (process.getuid?.() === 0) {
    chmodSync(dir, 0o711); // the mail user must reach its home
    chownSync(home, id.mailUid, id.mailGid);
  }
  const confPath = join(dir, 'dovecot.conf');
  const logPath = join(dir, 'dovecot.log');

  let child: ChildProcess | undefined;
  let port: number;
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    if (opts.oauth2) {
      writeFileSync(join(dir, 'dovecot-oauth2.conf.ext'), oauth2Config(opts.oauth2.introspectionUrl));
    }
    writeFileSync(confPath, config({ dir, port, password, home, id, mailFormat: opts.mailFormat ?? 'maildir', oauth2: Boolean(opts.oauth2) }));
    const { child: c, stderr } = spawnGuarded(bin, confPath, dir);
    try {
      await waitReady(c, port, logPath, stderr, opts.startTimeoutMs ?? 15_000);
      child = c;
      break;
    } catch (e) {
      await stopGroup(c);
      const inUse = /Address already in use/i.test(`${stderr()}\n${readLog(logPath)}`);
      if (!inUse || attempt >= 3) {
        rmSync(dir, { recursive: true, force: true });
        throw e;
      }
    }
  }

  let stopped = false;
  const running = child;
  return {
    host: '127.0.0.1',
    port,
    user,
    password,
    dir,
    maildir: join(home, 'Maildir'),
    logPath,
    ...imapHelpers(port, user, password),
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await stopGroup(running);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
