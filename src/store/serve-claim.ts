/**
 * The claim of one `serve` on its store: two bridges on one store would both watch the mailbox,
 * dispatch the same webhooks and sweep the same deadlines (docs/architecture.md, "One bridge per
 * store"). The claim is SQLite's own write lock on a file beside the store (`<store>-serve.lock`,
 * an empty database): a `BEGIN IMMEDIATE` held for the bridge's lifetime takes the RESERVED lock,
 * a POSIX advisory lock the kernel drops when the process ends however it ends (kill -9 too), so
 * no claim outlives its bridge and no pid is trusted for liveness. Another connection's `BEGIN
 * IMMEDIATE` gets SQLITE_BUSY at once, in another process or in this one (SQLite tracks the locks
 * of one file across its connections: https://sqlite.org/lockingv3.html). The file's name has no
 * length limit beyond the store's own (a Unix socket path would: 104–108 bytes).
 *
 * The commands that ask whether a serve runs ({@link claimHeld}: status, stop, doctor, tasks) take
 * the same lock for a moment and let it go, without waiting. So `serve`'s claim
 * ({@link claimStore}) does not give up at its first SQLITE_BUSY: it tries again every
 * {@link CLAIM_RETRY_MS} ms for up to {@link CLAIM_WAIT_MS} ms in all, which outlasts such a probe
 * (microseconds), and refuses only when the lock is still held after that: a real holder makes a
 * second serve refuse within {@link CLAIM_WAIT_MS} ms.
 *
 * Who holds it (pid, listen address, config) is written by the holder into `<store>-serve.json`
 * (mode 0600), read by the bridge that is refused, for its message. Read commands take no claim.
 *
 * The lock's connections keep their rollback journal in memory ({@link openLock}), so no
 * `<store>-serve.lock-journal` lies beside it while serve runs (fresh-user trial).
 */
import { commandLine, shellWord } from '../config/config-path.js';
import Database from 'better-sqlite3';
import { closeSync, existsSync, lstatSync, mkdirSync, openSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { StoreError, type Db } from './db.js';

/** Who holds a claim, as its holder wrote it. `listen` is `host:port` (the bound port once it listens). */
export interface ClaimHolder {
  pid: number;
  listen: string;
  /** The config file the holder was started with. */
  config: string;
  /** When it took the claim, ms since the epoch. */
  since: number;
}

/**
 * `serve` refused: another live process holds the claim on this store. `holder` is null when it
 * cannot be told who (it is taking the claim this instant, or its note is unreadable).
 */
export class StoreInUseError extends Error {
  override readonly name = 'StoreInUseError';
  constructor(
    message: string,
    readonly holder: ClaimHolder | null,
  ) {
    super(message);
  }
}

/** A claim taken. */
export interface StoreClaim {
  /** The lock file (`<store>-serve.lock`, the store's real path). */
  readonly lockFile: string;
  /** Rewrites the holder's note with the address it listens at (port 0 becomes the bound port). */
  listening(listen: string): void;
  /** Drops the note and the lock; a second call does nothing. */
  release(): void;
}

/**
 * How long, in ms, serve's claim keeps trying a lock another connection holds before it refuses:
 * long enough for a {@link claimHeld} probe (which holds it for microseconds) to let go, short
 * enough that a second serve on a held store is refused at once as a person sees it.
 */
export const CLAIM_WAIT_MS = 500;
/** The pause between two tries of the claim's lock, in ms. */
export const CLAIM_RETRY_MS = 10;

/** Test seam of {@link claimStore}. */
export interface ClaimHooks {
  /**
   * Waits `ms` before the next try of a busy lock (default: a synchronous sleep, `Atomics.wait`;
   * serve is not serving yet). A test injects its clock here, and can let go of a lock it holds.
   */
  pause?: (ms: number) => void;
}

/** Blocks this thread for `ms` ms (the claim is taken before serve listens, so nothing else waits on it). */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** The lock and note files of `storePath`: beside the store's real path, so two paths to one store (a symlinked folder) meet. */
export function claimFiles(storePath: string): { lock: string; note: string } {
  let real: string;
  try {
    real = realpathSync(storePath);
  } catch {
    real = join(realpathSync(dirname(storePath)), basename(storePath));
  }
  return { lock: `${real}-serve.lock`, note: `${real}-serve.json` };
}

/**
 * Whether a serve has run on `storePath` though no store file is there now: its claim lock
 * ({@link claimFiles}; it stays after every stop) is there. Then the store was moved or deleted
 * while or after a bridge ran on it — or a serve stopped before it first opened its store (a
 * signal early in its start). Never throws (false when the folder cannot be read).
 */
export function storeWasHere(storePath: string): boolean {
  try {
    return !existsSync(storePath) && existsSync(claimFiles(storePath).lock);
  } catch {
    return false;
  }
}

/** The note of the holder, or null when it is missing, unreadable, or names a process that is gone (a note a crash left). */
function readHolder(note: string): ClaimHolder | null {
  let h: Partial<ClaimHolder>;
  try {
    h = JSON.parse(readFileSync(note, 'utf8')) as Partial<ClaimHolder>;
  } catch {
    return null;
  }
  if (typeof h.pid !== 'number' || typeof h.listen !== 'string' || typeof h.config !== 'string' || typeof h.since !== 'number') return null;
  try {
    process.kill(h.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return null;
  }
  return h as ClaimHolder;
}

/**
 * Opens the claim's lock file as SQLite (better-sqlite3 options as given) with `journal_mode =
 * MEMORY`. The `BEGIN IMMEDIATE` on the empty lock database makes its page 1 in the page cache,
 * which in the default DELETE mode opens `<lock>-journal` on disk for as long as the claim is held.
 * Keeping that journal in memory is crash-safe here because the lock database never commits: the
 * transaction is held for the process's life and ends by ROLLBACK or close, no page is ever
 * written to the file (one page cannot spill from the cache), so a crash leaves nothing half-written
 * to roll back — the file stays empty. What the claim relies on, the POSIX locks on the lock file
 * that the kernel drops when the process ends, does not depend on the journal mode
 * (https://sqlite.org/pragma.html#pragma_journal_mode, https://sqlite.org/lockingv3.html). A journal
 * an older version left on disk is a hot journal of an empty database, rolled back and deleted at
 * the first read.
 * @throws the error of better-sqlite3's open
 */
function openLock(lock: string, options: Database.Options): Db {
  const db = new Database(lock, options);
  try {
    db.pragma('journal_mode = MEMORY');
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

/**
 * One try of the claim's lock file `lock` (which must exist), at once (SQLite busy timeout 0, no
 * retry): the probe of {@link claimHeld}. `'busy'` when another connection holds it; null when the
 * file cannot be opened or the try fails otherwise; else the lock, held until `release()`.
 */
export function probeLock(lock: string): 'busy' | { release(): void } | null {
  let db: Db;
  try {
    db = openLock(lock, { timeout: 0, fileMustExist: true });
  } catch {
    return null;
  }
  try {
    db.exec('BEGIN IMMEDIATE');
  } catch (err) {
    db.close();
    return (err as { code?: string }).code === 'SQLITE_BUSY' ? 'busy' : null;
  }
  return {
    release() {
      if (!db.open) return;
      db.exec('ROLLBACK');
      db.close();
    },
  };
}

/**
 * Whether a claim's note names the config file `configFile` (both compared as real paths, so a
 * relative or symlinked path to the same file matches; a path that no longer resolves compares as
 * written): the holder is then this config's own bridge, whatever server.bearer it read at start.
 */
export function notesConfig(holder: ClaimHolder, configFile: string): boolean {
  const real = (f: string): string => {
    try {
      return realpathSync(f);
    } catch {
      return f;
    }
  };
  return real(holder.config) === real(configFile);
}

/**
 * Whether a `serve` holds the claim on the store at `storePath` now, and its note. Asked by the
 * commands that talk to the bridge (status, stop, doctor) before they present the bearer at
 * `server.listen`: a serve holding the claim has bound its address (it notes the bound port), so
 * what answers there is that serve and not a process that took the address while no bridge ran
 * (attack: it was sent the bearer and named the pid `stop` signalled). Only files of this user,
 * not symlinks, count (another user could plant both in a folder others can write). Tries the
 * lock once ({@link probeLock}: `BEGIN IMMEDIATE`, never waiting) and lets go of it; a serve
 * starting in that microsecond waits for it ({@link CLAIM_WAIT_MS}) rather than being refused.
 * @returns held false when no live process holds it (no lock file, or the lock was free)
 */
export function claimHeld(storePath: string): { held: false } | { held: true; holder: ClaimHolder | null } {
  let files: { lock: string; note: string };
  try {
    files = claimFiles(storePath);
  } catch {
    return { held: false };
  }
  const mine = (f: string): boolean => {
    try {
      const st = lstatSync(f);
      return st.isFile() && st.uid === (process.getuid?.() ?? st.uid);
    } catch {
      return false;
    }
  };
  if (!mine(files.lock)) return { held: false };
  const probe = probeLock(files.lock);
  if (probe === 'busy') return { held: true, holder: mine(files.note) ? readHolder(files.note) : null };
  probe?.release();
  return { held: false };
}

/**
 * The error of a claim not taken: StoreInUseError naming the holder (its note) and the fix when
 * the lock was still busy, else StoreError with SQLite's.
 */
function claimRefusal(err: unknown, storePath: string, lock: string, note: string): Error {
  if ((err as { code?: string }).code !== 'SQLITE_BUSY') return new StoreError(`cannot take ${lock}, the lock of one serve per store: ${(err as Error).message}`, { cause: err });
  return storeInUse(storePath, readHolder(note));
}

/**
 * The refusal of a serve whose store another live serve holds: StoreInUseError naming that serve
 * (`other`, its note; null when unknown) and the fix.
 */
export function storeInUse(storePath: string, other: ClaimHolder | null): StoreInUseError {
  const { lock } = claimFiles(storePath);
  const who = other
    ? `pid ${other.pid}, listening at ${other.listen}, started with the config ${other.config}`
    : 'a process starting this instant, or one whose note is unreadable';
  const stop = other ? `stop that bridge first (${commandLine(other.config, 'stop')}, or its service; else kill ${other.pid})` : `stop the other bridge first (fuser ${shellWord(lock)} names its pid)`;
  return new StoreInUseError(
    `the store ${storePath} is in use by another a2a-mailbridge serve (${who}): two bridges on one store would both read the mailbox and send the same webhooks; ${stop}, or give this config its own store.path`,
    other,
  );
}

/** Writes the note whole or not at all (a temporary file renamed over it), mode 0600. */
function writeHolder(note: string, h: ClaimHolder): void {
  const tmp = `${note}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(h)}\n`, { mode: 0o600 });
  renameSync(tmp, note);
}

/**
 * Takes the claim of `serve` on the store at `storePath` (its folder made mode 0700 when missing,
 * as the store's open does; the lock file made mode 0600), and notes who holds it. A lock another
 * connection holds is tried again every {@link CLAIM_RETRY_MS} ms for up to {@link CLAIM_WAIT_MS}
 * ms (a {@link claimHeld} probe lets go within that), then refused.
 * @param holder the listen address (`host:port`) and config file of this bridge, for the message another one gets
 * @param hooks test seam ({@link ClaimHooks})
 * @throws StoreInUseError when a live process still holds it after {@link CLAIM_WAIT_MS} ms, naming that process and the fix;
 *   StoreError when the lock file cannot be made or opened
 */
export function claimStore(storePath: string, holder: { listen: string; config: string }, hooks: ClaimHooks = {}): StoreClaim {
  mkdirSync(dirname(storePath), { recursive: true, mode: 0o700 });
  const { lock, note } = claimFiles(storePath);
  let db: Db;
  try {
    // Made here first so it is 0600 whatever the umask (SQLite would make it 0644 less the umask).
    if (!existsSync(lock)) closeSync(openSync(lock, 'a', 0o600));
    db = openLock(lock, { timeout: 0 });
  } catch (err) {
    throw new StoreError(`cannot open ${lock}, the lock of one serve per store: ${(err as Error).message}`, { cause: err });
  }
  const pause = hooks.pause ?? sleepSync;
  for (let waited = 0; ; ) {
    try {
      db.exec('BEGIN IMMEDIATE');
      break;
    } catch (err) {
      if ((err as { code?: string }).code !== 'SQLITE_BUSY' || waited >= CLAIM_WAIT_MS) {
        db.close();
        throw claimRefusal(err, storePath, lock, note);
      }
    }
    const step = Math.min(CLAIM_RETRY_MS, CLAIM_WAIT_MS - waited);
    pause(step);
    waited += step;
  }
  const mine: ClaimHolder = { pid: process.pid, listen: holder.listen, config: holder.config, since: Date.now() };
  writeHolder(note, mine);
  let held = true;
  return {
    lockFile: lock,
    listening(listen) {
      if (held) writeHolder(note, { ...mine, listen });
    },
    release() {
      if (!held) return;
      held = false;
      // The note first, while the lock still keeps any other bridge from writing its own.
      rmSync(note, { force: true });
      db.close();
    },
  };
}
