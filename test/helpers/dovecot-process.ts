/**
 * Process control of test Dovecots (see dovecot.ts): finding the binary, the `sh` guard that stops
 * Dovecot when the test process dies, waiting for the greeting, and killing a guard's process
 * group, with an `exit` hook for the ones still running.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { delimiter, join } from 'node:path';

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

export function readLog(path: string): string {
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

export async function waitReady(child: ChildProcess, port: number, logPath: string, stderr: () => string, timeoutMs: number): Promise<void> {
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
export async function stopGroup(child: ChildProcess): Promise<void> {
  const pgid = child.pid;
  if (pgid === undefined) return;
  killGroup(pgid, 'SIGKILL');
  const until = Date.now() + 5000;
  while (groupRunning(pgid) && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  live.delete(pgid);
}

/**
 * Spawns the guard running `bin -F -c confPath` (its temp dir `dir`), detached in a process group
 * of its own and unref'd, and registers it for the exit hook.
 * @returns the guard and a reader of everything it wrote to stderr so far.
 */
export function spawnGuarded(bin: string, confPath: string, dir: string): { child: ChildProcess; stderr: () => string } {
  installExitHook();
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
  return { child: c, stderr: () => err };
}
