import { statSync } from 'node:fs';
import type { IntegrityResult } from '../store/store.js';
import type { BridgeContext } from './context.js';
import { monotonicMs } from '../monotonic.js';

/** The outcome of a background quick_check of the store (src/store/integrity.ts). */
export interface StoreCheck extends IntegrityResult {
  /** When it finished, bridge clock (ms). */
  at: number;
  /** How long it took, ms. */
  tookMs: number;
}

/** How often a refresh looks at the store's WAL, in ms (store/wal.ts). */
const STORE_MAINTENANCE_MS = 60_000;

/**
 * The background integrity check of the store (quick_check on a worker thread,
 * src/store/integrity.ts): the first this long after the bridge starts, in ms, so a start is
 * never slowed by reading the whole file…
 */
export const STORE_CHECK_FIRST_MS = 10 * 60_000;
/** …then once a day, in ms. */
export const STORE_CHECK_EVERY_MS = 24 * 3600_000;

/**
 * The store's upkeep (issue 17: no whole-file check on open): the WAL kept small and the
 * background integrity check on its schedule. Run by every refresh and by `serve`'s timer
 * (Bridge.maintainStore).
 */
export class StoreUpkeep {
  /** When the store's WAL was last looked at (bridge clock, ms); 0 at start, so the first run does. */
  private maintainedAt = 0;
  /** When the next background integrity check is due (bridge clock, ms). */
  private checkDueAt: number;
  private running = false;
  /** The last background integrity check; null before the first. */
  lastCheck: StoreCheck | null = null;
  /** The store file's device and inode when the upkeep began; null when none could be read (a store in memory). */
  private readonly file: string | null;
  /** Whether the last look found another file, or none, at `store.path`. */
  private fileAway = false;

  /** @param track keeps background work until the bridge closes */
  constructor(
    private readonly ctx: Pick<BridgeContext, 'store' | 'log' | 'now' | 'config'>,
    private readonly track: (p: Promise<unknown>) => void,
  ) {
    this.checkDueAt = ctx.now() + STORE_CHECK_FIRST_MS;
    this.file = fileIdentity(ctx.config.store.path);
  }

  /**
   * When it is due ({@link STORE_CHECK_FIRST_MS}, then every {@link STORE_CHECK_EVERY_MS}), start
   * the integrity check on a worker thread; and at most once a minute (on the bridge clock),
   * truncate a WAL that grew while a reader held a snapshot (store/wal.ts), the log first
   * checkpointed on the checkpoint worker (store/checkpointer.ts: off the event loop; one already
   * under way there would make the truncation here find the log busy). Never waits for a reader
   * and never fails the call it runs in.
   */
  async run(): Promise<void> {
    const now = this.ctx.now();
    if (now >= this.checkDueAt && !this.running) this.start(now);
    if (now - this.maintainedAt < STORE_MAINTENANCE_MS) return;
    this.maintainedAt = now;
    this.lookAtFile(now);
    try {
      await this.ctx.store.checkpoint();
      const r = this.ctx.store.shrinkWal();
      if (r.before !== r.after) this.ctx.log.info({ walBytes: r.before, now: r.after }, 'store WAL truncated');
    } catch (err) {
      this.ctx.log.warn({ err: (err as Error).message }, 'store WAL maintenance postponed');
    }
  }

  /** When {@link run} next has work to start (bridge clock, ms): the integrity check or the WAL's look, whichever comes first. */
  dueAt(): number {
    return Math.min(this.checkDueAt, this.maintainedAt + STORE_MAINTENANCE_MS);
  }

  /**
   * Whether `store.path` still names the file the bridge opened. A file moved or deleted under a
   * running bridge takes everything it records with it (deleted: lost at the stop), and `status`
   * and `stop` found the bridge no more (trial 11; they now follow its claim where its folder was
   * moved: src/cli/listen-owner.ts): that is a store not ok in /health, logged once at error,
   * until the file is back.
   */
  private lookAtFile(now: number): void {
    if (this.file === null) return;
    const path = this.ctx.config.store.path;
    const seen = fileIdentity(path);
    if (seen === this.file) {
      if (!this.fileAway) return;
      this.fileAway = false;
      this.lastCheck = { ok: true, detail: `the store file is at ${path} again`, at: now, tookMs: 0 };
      this.ctx.log.info({ path }, 'the store file is at store.path again');
      return;
    }
    if (this.fileAway) return;
    this.fileAway = true;
    const what = seen === null ? 'was moved away or deleted' : 'was replaced by another file';
    const detail = `the store file ${path} ${what} while the bridge runs: what it records goes to the file it opened, no longer at store.path; put the file back, or stop the bridge (a2a-mailbridge stop finds it by its claim, or where its store folder was moved on Linux; else kill ${process.pid}) and restore a backup`;
    this.lastCheck = { ok: false, detail, at: now, tookMs: 0 };
    this.ctx.log.error({ path }, detail);
  }

  /** The background quick_check: its outcome is logged (a damaged store at error) and shown by /health. */
  private start(now: number): void {
    this.running = true;
    this.checkDueAt = now + STORE_CHECK_EVERY_MS;
    const started = monotonicMs();
    this.track(
      this.ctx.store
        .quickCheckInBackground()
        .then((r) => {
          this.lastCheck = { ...r, at: this.ctx.now(), tookMs: Math.round(monotonicMs() - started) };
          if (r.ok) this.ctx.log.info({ tookMs: this.lastCheck.tookMs }, 'store integrity check: ok');
          else this.ctx.log.error({ detail: r.detail }, 'store integrity check failed: the store is damaged; restore it from a backup (a2a-mailbridge backup) or move it aside to start empty');
        })
        .finally(() => {
          this.running = false;
        }),
    );
  }
}

/** A file's device and inode (`dev:ino`), null when it cannot be read (missing, or `:memory:`). */
function fileIdentity(path: string): string | null {
  try {
    const st = statSync(path, { bigint: true });
    return `${st.dev}:${st.ino}`;
  } catch {
    return null;
  }
}
