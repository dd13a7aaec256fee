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
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { delimiter, join } from 'node:path';
import { ImapFlow } from 'imapflow';
import { freePort } from './free-port.js';

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

/** Temp dirs of the Dovecots this process started and has not stopped yet, by guard process group. */
const live = new Map<number, string>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const [pgid, dir] of live) {
      try {
        killGroup(pgid, 'SIGKILL');
        rmSync(dir, { recursive: true, force: true });
      } catch {
        // nothing more can be done while exiting
      }
    }
  });
}

/** Sends `signal` to a process group; false when the group no longer exists. */
function killGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
}

/**
 * The Dovecot binary: `dovecot` on PATH, else `/usr/sbin/dovecot`.
 * @throws Error naming the package to install when neither exists.
 */
export function findDovecot(): string {
  const dirs = (process.env.PATH ?? '').split(delimiter).filter(Boolean);
  for (const d of [...dirs, '/usr/sbin', '/usr/local/sbin']) {
    const p = join(d, 'dovecot');
    if (existsSync(p)) return p;
  }
  throw new Error('Dovecot is not installed: the IMAP integration tests need it. Install it with `apt-get install -y dovecot-imapd` (Debian/Ubuntu).');
}

function idOf(args: string[]): string | null {
  try {
    return execFileSync('id', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

interface Identity {
  internalUser: string;
  /** Set when it is not Dovecot's default (the `dovecot` group). */
  internalGroup: string | null;
  loginUser: string;
  mailUid: number;
  mailGid: number;
}

function identity(): Identity {
  if (process.getuid?.() === 0) {
    const mailUid = Number(idOf(['-u', 'nobody']) ?? 65534);
    const mailGid = Number(idOf(['-g', 'nobody']) ?? 65534);
    const hasDovecot = idOf(['-u', 'dovecot']) !== null;
    const hasDovenull = idOf(['-u', 'dovenull']) !== null;
    return {
      internalUser: hasDovecot ? 'dovecot' : 'nobody',
      internalGroup: hasDovecot ? null : idOf(['-gn', 'nobody']),
      loginUser: hasDovenull ? 'dovenull' : 'nobody',
      mailUid,
      mailGid,
    };
  }
  const me = userInfo();
  const group = idOf(['-gn']);
  if (!group) throw new Error('cannot find the name of the current primary group (`id -gn` failed)');
  return { internalUser: me.username, internalGroup: group, loginUser: me.username, mailUid: me.uid, mailGid: me.gid };
}

function config(o: { dir: string; port: number; password: string; home: string; id: Identity; mailFormat: 'maildir' | 'mdbox'; oauth2?: boolean }): string {
  const { dir, id } = o;
  return `# written by test/helpers/dovecot.ts
protocols = imap
listen = 127.0.0.1
base_dir = ${dir}/run
state_dir = ${dir}/state
log_path = ${dir}/dovecot.log
info_log_path = ${dir}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login${o.oauth2 ? ' xoauth2 oauthbearer' : ''}
auth_failure_delay = 0
default_internal_user = ${id.internalUser}
${id.internalGroup ? `default_internal_group = ${id.internalGroup}` : ''}
default_login_user = ${id.loginUser}
first_valid_uid = ${id.mailUid}
last_valid_uid = ${id.mailUid}
first_valid_gid = ${id.mailGid}
last_valid_gid = ${id.mailGid}
mail_location = ${o.mailFormat === 'mdbox' ? 'mdbox:~/mdbox' : 'maildir:~/Maildir'}
mail_fsync = never
${o.oauth2 ? `passdb {
  driver = oauth2
  mechanisms = xoauth2 oauthbearer
  args = ${dir}/dovecot-oauth2.conf.ext
}
` : ''}passdb {
  driver = static
  args = password=${o.password}
  ${o.oauth2 ? 'mechanisms = plain login' : ''}
}
userdb {
  driver = static
  args = uid=${id.mailUid} gid=${id.mailGid} home=${o.home}
}
protocol imap {
  mail_max_userip_connections = 200
}
service imap-login {
  chroot =
  inet_listener imap {
    address = 127.0.0.1
    port = ${o.port}
  }
  inet_listener imaps {
    port = 0
  }
}
service anvil {
  chroot =
  # No auth penalty: every test logs in from 127.0.0.1, and one wrong-password test would slow
  # every later login by 2-15 s (Dovecot "Authentication Penalty").
  unix_listener anvil-auth-penalty {
    mode = 0
  }
}
`;
}


/** Reads the first line a server sends on `port`; null on refusal, reset or 1 s of silence. */
function firstLine(port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const sock = createConnection({ host: '127.0.0.1', port });
    let buf = '';
    const done = (v: string | null): void => {
      sock.destroy();
      resolve(v);
    };
    sock.setTimeout(1000, () => done(null));
    sock.on('error', () => done(null));
    sock.on('data', (d) => {
      buf += d.toString('latin1');
      const i = buf.indexOf('\r\n');
      if (i >= 0) done(buf.slice(0, i));
    });
    sock.on('close', () => done(null));
  });
}

function readLog(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '(no log file)';
  }
}

/**
 * The guard: runs Dovecot in the background of a shell that waits on its stdin. The stdin pipe
 * closes when the test process dies for any reason, and the guard then stops Dovecot and removes
 * its temp dir ($3).
 */
const GUARD = '"$1" -F -c "$2" & d=$!; cat >/dev/null; kill -TERM "$d" 2>/dev/null; wait "$d"; rm -rf -- "$3"';

async function waitReady(child: ChildProcess, port: number, logPath: string, stderr: () => string, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  let last: string | null = null;
  while (Date.now() < until) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`Dovecot exited during start-up (code ${child.exitCode ?? child.signalCode}).\nstderr:\n${stderr()}\nlog:\n${readLog(logPath)}`);
    }
    last = await firstLine(port);
    // While the auth process is not up yet, Dovecot greets with "* OK Waiting for authentication
    // process to respond.." and only later with the real greeting; wait for the real one.
    if (last?.startsWith('* OK') && !/Waiting for authentication/i.test(last)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(
    `Dovecot did not greet on 127.0.0.1:${port} within ${timeoutMs} ms (last line: ${JSON.stringify(last)}).\nstderr:\n${stderr()}\nlog:\n${readLog(logPath)}`,
  );
}

/**
 * Whether a process of the group still runs. On Linux this reads /proc and ignores zombies (a
 * killed Dovecot's children are re-parented to PID 1, which may reap them late, and
 * `kill(-pgid, 0)` counts zombies); elsewhere it asks `kill(-pgid, 0)`.
 */
function groupRunning(pgid: number): boolean {
  if (!existsSync('/proc/self/stat')) return killGroup(pgid, 0);
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so split after the last ')'.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z' && state !== 'X') return true;
  }
  return false;
}

/**
 * Stops one Dovecot: SIGKILL to the guard's process group (guard, master and every child), then
 * waits until none of it runs. SIGKILL at once because a test Dovecot has nothing to save and its
 * graceful shutdown costs about a second; the killed master's children are re-parented to PID 1
 * and are zombies until it reaps them, which `groupRunning` does not count.
 */
async function stopGroup(child: ChildProcess): Promise<void> {
  const pgid = child.pid;
  if (pgid === undefined) return;
  killGroup(pgid, 'SIGKILL');
  const until = Date.now() + 5000;
  while (groupRunning(pgid) && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  live.delete(pgid);
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
  installExitHook();

  let child: ChildProcess | undefined;
  let port = 0;
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    if (opts.oauth2) {
      writeFileSync(
        join(dir, 'dovecot-oauth2.conf.ext'),
        `introspection_mode = post\nintrospection_url = ${opts.oauth2.introspectionUrl}\nforce_introspection = yes\nusername_attribute = username\nactive_attribute = active\nactive_value = true\n`,
      );
    }
    writeFileSync(confPath, config({ dir, port, password, home, id, mailFormat: opts.mailFormat ?? 'maildir', oauth2: Boolean(opts.oauth2) }));
    const c = spawn('sh', ['-c', GUARD, 'dovecot-guard', bin, confPath, dir], { detached: true, stdio: ['pipe', 'ignore', 'pipe'] });
    let err = '';
    c.stderr?.setEncoding('utf8').on('data', (d: string) => (err += d));
    // A failed spawn emits 'error'; waitReady sees the exit code.
    c.on('error', (e) => (err += `${e.message}\n`));
    if (c.pid !== undefined) live.set(c.pid, dir);
    // Keep the handles from holding the event loop open: the exit hook and the guard clean up.
    c.unref();
    (c.stdin as unknown as { unref?: () => void } | null)?.unref?.();
    (c.stderr as unknown as { unref?: () => void } | null)?.unref?.();
    try {
      await waitReady(c, port, logPath, () => err, opts.startTimeoutMs ?? 15_000);
      child = c;
      break;
    } catch (e) {
      await stopGroup(c);
      const inUse = /Address already in use/i.test(`${err}\n${readLog(logPath)}`);
      if (!inUse || attempt >= 3) {
        rmSync(dir, { recursive: true, force: true });
        throw e;
      }
    }
  }

  const client = async <T>(fn: (c: ImapFlow) => Promise<T>): Promise<T> => {
    const c = new ImapFlow({
      host: '127.0.0.1', port, secure: false, doSTARTTLS: false, auth: { user, pass: password },
      logger: false, disableAutoIdle: true, connectionTimeout: 5000, greetingTimeout: 5000, socketTimeout: 10_000,
    });
    c.on('error', () => {}); // imapflow #302: an unhandled 'error' would kill the test process
    await c.connect();
    try {
      return await fn(c);
    } finally {
      await c.logout().catch(() => c.close());
    }
  };

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
    append: (raw, o = {}) =>
      client(async (c) => {
        const folder = o.folder ?? 'INBOX';
        const r = await c.append(folder, typeof raw === 'string' ? Buffer.from(raw) : raw, o.flags ?? []);
        if (!r || r.uid === undefined) throw new Error(`APPEND to ${folder} gave no UID (no UIDPLUS?)`);
        return r.uid;
      }),
    createFolder: (name) =>
      client(async (c) => {
        await c.mailboxCreate(name);
      }),
    deleteFolder: (name) =>
      client(async (c) => {
        await c.mailboxDelete(name);
      }),
    flagsOf: (uid, folder = 'INBOX') =>
      client(async (c) => {
        await c.mailboxOpen(folder, { readOnly: true });
        const m = await c.fetchOne(String(uid), { flags: true }, { uid: true });
        if (!m) throw new Error(`no message with UID ${uid} in ${folder}`);
        // \Recent is a per-session flag, not a stored one: leave it out so before/after compare.
        return [...(m.flags ?? [])].filter((f) => f !== '\\Recent').sort();
      }),
    uidValidity: (folder = 'INBOX') =>
      client(async (c) => {
        const s = await c.status(folder, { uidValidity: true });
        if (!s || s.uidValidity === undefined) throw new Error(`STATUS ${folder} gave no UIDVALIDITY`);
        return s.uidValidity;
      }),
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await stopGroup(running);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
