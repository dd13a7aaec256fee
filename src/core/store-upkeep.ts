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
  /** The last background integrity check of the bridge's file; null before the first. */
  private integrity: StoreCheck | null = null;
  /**
   * The file at `store.path` as last looked at, kept apart from {@link integrity}: not ok while it
   * is not the file the bridge opened (moved away, deleted or replaced), ok once it is back; null
   * while it never was away.
   */
  private file: StoreCheck | null = null;

  /** @param track keeps background work until the bridge closes */
  constructor(
    private readonly ctx: Pick<BridgeContext, 'store' | 'log' | 'now' | 'config'>,
    private readonly track: (p: Promise<unknown>) => void,
  ) {
    this.checkDueAt = ctx.now() + STORE_CHECK_FIRST_MS;
  }

  /**
   * What /health shows of the store's checks: not ok while the file at `store.path` is not the
   * bridge's (its own guidance: put it back, or stop the bridge), else not ok while the last
   * integrity check failed; otherwise the later of the two, null before either.
   */
  get lastCheck(): StoreCheck | null {
    const { file, integrity } = this;
    if (file?.ok === false) return file;
    if (integrity?.ok === false || file === null) return integrity;
    return integrity === null || file.at > integrity.at ? file : integrity;
  }

  /**
   * When it is due ({@link STORE_CHECK_FIRST_MS}, then every {@link STORE_CHECK_EVERY_MS}), start
   * the integrity check on a worker thread; and at most once a minute (on the bridge clock),
   * truncate a WAL that grew while a reader held a snapshot (store/wal.ts), the log first
   * checkpointed on the checkpoint worker (store/checkpointer.ts: off the event loop; one already
   * under way there would make the truncation here find the log busy). Never waits for a reader
   * and never fails the call it runs in. The integrity check waits while the file at `store.path`
   * is not the bridge's: it would check the other file, or none.
   */
  async run(): Promise<void> {
    const now = this.ctx.now();
    if (now >= this.checkDueAt && !this.running && this.lookAtFile(now)) this.start(now);
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
   * until the file is back (Store.fileAtPath: the identity the store's connection opened).
   * @returns whether the file there is the bridge's (true in memory)
   */
  private lookAtFile(now: number): boolean {
    const seen = this.ctx.store.fileAtPath();
    const path = this.ctx.config.store.path;
    if (seen === null || seen === 'ours') {
      if (this.file?.ok !== false) return true;
      this.file = { ok: true, detail: `the store file is at ${path} again`, at: now, tookMs: 0 };
      this.ctx.log.info({ path }, 'the store file is at store.path again');
      return true;
    }
    if (this.file?.ok === false) return false;
    const what = seen === 'away' ? 'was moved away or deleted' : 'was replaced by another file';
    const detail = `the store file ${path} ${what} while the bridge runs: what it records goes to the file it opened, no longer at store.path; put the file back, or stop the bridge (a2a-mailbridge stop finds it by its claim, or where its store folder was moved on Linux; else kill ${process.pid}) and restore a backup`;
    this.file = { ok: false, detail, at: now, tookMs: 0 };
    this.ctx.log.error({ path }, detail);
    return false;
  }

  /**
   * The background quick_check: its outcome is logged (a damaged store at error) and shown by
   * /health. One that found the path no longer naming the bridge's file did not run (`away`): the
   * look at the file reports that, and the check is due again once the file is back.
   */
  private start(now: number): void {
    this.running = true;
    this.checkDueAt = now + STORE_CHECK_EVERY_MS;
    const started = monotonicMs();
    this.track(
      this.ctx.store
        .quickCheckInBackground()
        .then((r) => {
          if (r.away) {
            this.checkDueAt = now;
            this.lookAtFile(this.ctx.now());
            return;
          }
          this.integrity = { ...r, at: this.ctx.now(), tookMs: Math.round(monotonicMs() - started) };
          if (r.ok) this.ctx.log.info({ tookMs: this.integrity.tookMs }, 'store integrity check: ok');
          else this.ctx.log.error({ detail: r.detail }, 'store integrity check failed: the store is damaged; restore it from a backup (a2a-mailbridge backup) or move it aside to start empty');
        })
        .finally(() => {
          this.running = false;
        }),
    );
  }
}
