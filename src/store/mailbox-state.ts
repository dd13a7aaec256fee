import type { Db, Writer } from './db.js';
import { stmt } from './statements.js';

/**
 * The mailbox watermark and the last check's outcome, per folder. `uidValidity` is kept as a
 * decimal string because IMAP UIDVALIDITY is a 32-bit unsigned value that imapflow hands out as a
 * bigint (RFC 3501 §2.3.1.1: a 32-bit value); for a Maildir the "UID" is a delivery-time ordinal (see maildir-mailbox).
 */
export interface MailboxState {
  folder: string;
  uidValidity: string | null;
  lastUid: number;
  lastCheckAt: number | null;
  /** One line: what the last check did (`3 new, 1 applied`) or why it failed. */
  lastResult: string | null;
  lastError: string | null;
  /** When the current run of failures began; null while checks succeed. */
  errorSince: number | null;
  lastSuccessAt: number | null;
}

const SELECT = `SELECT folder, uid_validity AS uidValidity, last_uid AS lastUid, last_check_at AS lastCheckAt,
  last_result AS lastResult, last_error AS lastError, error_since AS errorSince, last_success_at AS lastSuccessAt
  FROM mailbox_state`;

/**
 * Migration 17: the names of a Maildir's files the narrowing found not ours (no agent's From, no
 * tag), kept so a restart does not open them again (src/uplink/mailbox.ts `NotOursRecord`); the
 * key they were judged under (UIDVALIDITY and the narrowing) is the folder's `not_ours_key`.
 */
export const NOT_OURS_MIGRATION = `
  ALTER TABLE mailbox_state ADD COLUMN not_ours_key TEXT;
  CREATE TABLE maildir_not_ours (
    folder TEXT NOT NULL,
    name   TEXT NOT NULL,
    PRIMARY KEY (folder, name)
  ) STRICT, WITHOUT ROWID;
`;

export function mailboxReads(db: Db) {
  return {
    /** The names of `folder` kept as not ours under `key` (none when they were kept under another). */
    notOurs(folder: string, key: string): string[] {
      const r = stmt(db, `SELECT not_ours_key AS k FROM mailbox_state WHERE folder = ?`).get(folder) as { k: string | null } | undefined;
      if (r?.k !== key) return [];
      return (stmt(db, `SELECT name FROM maildir_not_ours WHERE folder = ?`).pluck().all(folder) as string[]);
    },

    /** How many files of `folder` are kept as not ours (`status`); 0 on a store a read-only command found before migration 17. */
    notOursCount(folder: string): number {
      if (stmt(db, `SELECT 1 FROM sqlite_schema WHERE name = 'maildir_not_ours'`).get() === undefined) return 0;
      return (stmt(db, `SELECT count(*) FROM maildir_not_ours WHERE folder = ?`).pluck().get(folder) as number);
    },

    /**
     * One primary-key read. Not kept in memory here: a copy per connection missed another
     * process's commit; the bridge keeps what it needs by Store.generation (src/core/bridge.ts
     * schedule, src/core/view-cache.ts).
     */
    state(folder: string): MailboxState {
      return readMailboxState(db, folder);
    },
  };
}

function readMailboxState(db: Db, folder: string): MailboxState {
  const r = stmt(db, `${SELECT} WHERE folder = ?`).get(folder) as MailboxState | undefined;
  return r ?? { folder, uidValidity: null, lastUid: 0, lastCheckAt: null, lastResult: null, lastError: null, errorSince: null, lastSuccessAt: null };
}

export function mailboxWrites(w: Writer) {
  return {
    /** Moves the watermark; in the same transaction as the ledger row of the message at `uid`. */
    advance(folder: string, uidValidity: string, uid: number): void {
      stmt(w.db,
        `INSERT INTO mailbox_state (folder, uid_validity, last_uid) VALUES (?, ?, ?)
         ON CONFLICT(folder) DO UPDATE SET
           last_uid = CASE WHEN uid_validity IS excluded.uid_validity THEN max(last_uid, excluded.last_uid) ELSE excluded.last_uid END,
           uid_validity = excluded.uid_validity`,
      ).run(folder, uidValidity, uid);
    },

    /** Resets the watermark when UIDVALIDITY changed: the next check rescans the folder (the ledger dedupes). */
    reset(folder: string, uidValidity: string): void {
      stmt(w.db,
        `INSERT INTO mailbox_state (folder, uid_validity, last_uid) VALUES (?, ?, 0)
         ON CONFLICT(folder) DO UPDATE SET uid_validity = excluded.uid_validity, last_uid = 0`,
      ).run(folder, uidValidity);
    },

    /** Adds `add` to and drops `drop` from `folder`'s names kept as not ours under `key`; those kept under another key are dropped first. */
    saveNotOurs(folder: string, key: string, add: readonly string[], drop: readonly string[]): void {
      stmt(w.db, `INSERT INTO mailbox_state (folder) VALUES (?) ON CONFLICT(folder) DO NOTHING`).run(folder);
      const r = stmt(w.db, `SELECT not_ours_key AS k FROM mailbox_state WHERE folder = ?`).get(folder) as { k: string | null };
      if (r.k !== key) {
        stmt(w.db, `DELETE FROM maildir_not_ours WHERE folder = ?`).run(folder);
        stmt(w.db, `UPDATE mailbox_state SET not_ours_key = ? WHERE folder = ?`).run(key, folder);
      }
      const put = stmt(w.db, `INSERT INTO maildir_not_ours (folder, name) VALUES (?, ?) ON CONFLICT DO NOTHING`);
      for (const n of add) put.run(folder, n);
      const del = stmt(w.db, `DELETE FROM maildir_not_ours WHERE folder = ? AND name = ?`);
      for (const n of drop) del.run(folder, n);
    },

    /**
     * Records a check's outcome. A failure keeps `error_since` (the run of failures goes on), unless
     * that began before `runSince` (ms): then it was a previous run of the bridge's, which stopped
     * meanwhile, so nothing says the mailbox was unreachable since; this failure starts the run.
     * @returns for a success that ends a run of failures, when the run began (ms) and its last
     *   error; for a failure, whether it repeats the last check's (`repeated`): the run goes on
     *   (it began at or after `runSince`) with the same error (src/core/mail-check.ts logs a run's
     *   error once); for a success after a success, null
     */
    recordCheck(folder: string, r: { at: number; ok: boolean; result: string; error?: string; runSince?: number }): { failingSince: number; lastError: string } | { repeated: boolean } | null {
      stmt(w.db, `INSERT INTO mailbox_state (folder) VALUES (?) ON CONFLICT(folder) DO NOTHING`).run(folder);
      const was = stmt(w.db, `SELECT error_since AS failingSince, last_error AS lastError FROM mailbox_state WHERE folder = ? AND error_since IS NOT NULL`).get(folder) as { failingSince: number; lastError: string | null } | undefined;
      if (r.ok) {
        stmt(w.db, `UPDATE mailbox_state SET last_check_at = ?, last_result = ?, last_error = NULL, error_since = NULL, last_success_at = ? WHERE folder = ?`).run(r.at, r.result, r.at, folder);
        return was ? { failingSince: was.failingSince, lastError: was.lastError ?? '' } : null;
      }
      const error = r.error ?? r.result;
      const runSince = r.runSince ?? Number.MIN_SAFE_INTEGER;
      stmt(w.db, `UPDATE mailbox_state SET last_check_at = ?, last_result = ?, last_error = ?, error_since = CASE WHEN error_since IS NULL OR error_since < ? THEN ? ELSE error_since END WHERE folder = ?`).run(
        r.at, r.result, error, runSince, r.at, folder,
      );
      return { repeated: was !== undefined && was.failingSince >= runSince && was.lastError === error };
    },
  };
}
