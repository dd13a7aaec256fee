import type { Logger } from 'pino';
import { limitedLog, type LimitedLog } from '../log.js';

/** A folder's failing checks are logged at warn at most this often, in ms (a run's end goes with its start). */
export const CHECK_LOG_EVERY_MS = 60_000;

/** What ended a run of failures: when it began (ms) and its last error (`recordCheck`). */
export interface EndedRun {
  failingSince: number;
  lastError: string;
}

/**
 * The log of a folder's check outcomes: "mailbox check failed" at warn when a run of failures
 * begins and when its error changes, "failed again" at debug for a check that fails as the last
 * one did, and "mailbox check ok again" at info when the run ends — but a mailbox that flaps (a
 * failure and a success in turn, or two errors in turn: 340 pairs of lines in 15 s of watch mode,
 * attack review) gets at most one "failed" line a minute per folder (`limitedLog`): the next one
 * written says how many were held back (`suppressedSinceLast`), each is a debug line meanwhile, and
 * a run whose start was held back is logged at warn once the minute is over, if it still fails
 * then. A run's end is logged at info when its start was, at once; else at debug. So the first
 * failure after a quiet minute, and its end, are logged at once.
 */
export class CheckLog {
  readonly #log: Logger;
  readonly #limited: LimitedLog;
  /** Folders whose run of failures under way was logged at warn. */
  readonly #shown = new Set<string>();

  constructor(log: Logger) {
    this.#log = log;
    this.#limited = limitedLog(log, CHECK_LOG_EVERY_MS);
  }

  /**
   * A check of `folder` failed with `err` at `at` (ms).
   * @param repeated it failed as the last check did, in the same run (`recordCheck`)
   */
  failed(at: number, folder: string, err: string, repeated: boolean): void {
    if (repeated && this.#shown.has(folder)) return void this.#log.debug({ err, folder }, 'mailbox check failed again');
    if (this.#limited(at, 'warn', folder, { err, folder }, 'mailbox check failed')) this.#shown.add(folder);
  }

  /** A check of `folder` succeeded; `ended`: the run of failures it ended, if any. */
  ok(folder: string, ended: EndedRun | null): void {
    if (!ended) return;
    const fields = { folder, failingSince: new Date(ended.failingSince).toISOString(), lastError: ended.lastError };
    if (this.#shown.delete(folder)) this.#log.info(fields, 'mailbox check ok again');
    else this.#log.debug(fields, 'mailbox check ok again');
  }
}

/** One check log per logger: its state lives as long as the bridge's logger, across checks. */
const checkLogs = new WeakMap<Logger, CheckLog>();

/** The check log that writes to `log`. */
export function checkLogOf(log: Logger): CheckLog {
  let l = checkLogs.get(log);
  if (!l) checkLogs.set(log, (l = new CheckLog(log)));
  return l;
}
