import type { Db, Writer } from './db.js';
import { assertDispatchMove, type DispatchState } from './dispatch-state.js';
import { replyTextSql } from './large-values.js';
import { stmt } from './statements.js';
import { LEDGER_AFTER_SQL } from './turn-ledger.js';

export type { DispatchState } from './dispatch-state.js';

/**
 * The reply statuses of the reply format (docs/architecture.md, "The reply format"); the schema
 * holds them (`turns.reply_status`, `replies.kind`: migration 15 added `rejected`).
 */
export type ReplyStatus = 'done' | 'input-required' | 'failed' | 'rejected' | 'working';

/** One turn of a task: what the caller asked, the webhook that carried it, and the agent's reply. */
export interface TurnRow {
  taskId: string;
  turn: number;
  ask: string;
  /** The live reply token (32 lowercase hex), or null once used or revoked. Never logged. */
  replyToken: string | null;
  deadlineAt: number;
  /** The Standard Webhooks `webhook-id`, stable across every attempt of this dispatch. */
  dispatchId: string;
  /**
   * The exact JSON bytes of the webhook body, signed and sent identically on every attempt (and the
   * base of a cancel notice); empty once the task is COMPLETED, REJECTED or FAILED other than by
   * dispatch (see taskWrites.transition in task-rows.ts).
   */
  envelope: Buffer;
  dispatchState: DispatchState;
  nextAttemptAt: number | null;
  acceptedAt: number | null;
  replyStatus: ReplyStatus | null;
  replyText: string | null;
  replyLedgerId: number | null;
  repliedAt: number | null;
  createdAt: number;
}

/** One turn as the webhook's thread carries it: the caller's ask and the agent's reply text (null: none, or a progress note). */
export interface ThreadTurn {
  turn: number;
  ask: string;
  replyText: string | null;
}

/** What a task's view shows of its current turn: no ask, token or signed envelope (src/core/task-view.ts). */
export type TurnStatus = Pick<TurnRow, 'turn' | 'dispatchId' | 'createdAt' | 'nextAttemptAt' | 'acceptedAt' | 'replyStatus' | 'replyText' | 'replyLedgerId' | 'repliedAt'>;

/**
 * The reply's text is stored once (bytes per task: bench/RESULTS.md, million): in its reply row
 * (src/store/replies.ts, or the large value it names: src/store/large-values.ts) when there is one,
 * which is read here; `turns.reply_text` holds it only for a reply recorded without one (stores
 * written before replies had rows, migration 7).
 */
const REPLY_TEXT = `coalesce(${replyTextSql('r')}, t.reply_text) AS replyText`;
const FROM = `FROM turns t LEFT JOIN replies r ON r.ledger_id = t.reply_ledger_id`;

const SELECT = `SELECT t.task_id AS taskId, t.turn, t.ask, t.reply_token AS replyToken, t.deadline_at AS deadlineAt,
  t.dispatch_id AS dispatchId, t.envelope, t.dispatch_state AS dispatchState, t.next_attempt_at AS nextAttemptAt,
  t.accepted_at AS acceptedAt, t.reply_status AS replyStatus, ${REPLY_TEXT},
  t.reply_ledger_id AS replyLedgerId, t.replied_at AS repliedAt, t.created_at AS createdAt ${FROM}`;

export function turnReads(db: Db) {
  return {
    get(taskId: string, turn: number): TurnRow | undefined {
      return stmt(db, `${SELECT} WHERE t.task_id = ? AND t.turn = ?`).get(taskId, turn) as TurnRow | undefined;
    },

    /** The columns of a turn a task's view shows ({@link TurnStatus}): the envelope blob stays on disk. */
    status(taskId: string, turn: number): TurnStatus | undefined {
      return stmt(db,
        `SELECT t.turn, t.dispatch_id AS dispatchId, t.created_at AS createdAt, t.next_attempt_at AS nextAttemptAt, t.accepted_at AS acceptedAt,
           t.reply_status AS replyStatus, ${REPLY_TEXT}, t.reply_ledger_id AS replyLedgerId, t.replied_at AS repliedAt
         ${FROM} WHERE t.task_id = ? AND t.turn = ?`,
      ).get(taskId, turn) as TurnStatus | undefined;
    },

    /**
     * The thread material of a task's turns before `before` — each turn's ask, and its reply text
     * unless none or a progress note (`working`) — newest turn first, read row by row as the
     * caller iterates (src/core/envelope-thread.ts stops once its budget is spent). The iterator
     * holds the connection: finish or break out of it before any other statement.
     */
    threadNewestFirst(taskId: string, before: number): IterableIterator<ThreadTurn> {
      return stmt(db,
        `SELECT t.turn, t.ask, CASE WHEN coalesce(t.reply_status, '') = 'working' THEN NULL ELSE coalesce(${replyTextSql('r')}, t.reply_text) END AS replyText
         ${FROM} WHERE t.task_id = ? AND t.turn < ? ORDER BY t.turn DESC`,
      ).iterate(taskId, before) as IterableIterator<ThreadTurn>;
    },

    /** How many thread entries ({@link threadNewestFirst}) the turns before `before` hold, counted without reading their text. */
    threadEntriesBefore(taskId: string, before: number): number {
      const r = stmt(db,
        `SELECT count(*) + coalesce(sum(CASE WHEN coalesce(t.reply_status, '') != 'working' AND (r.ledger_id IS NOT NULL OR t.reply_text IS NOT NULL) THEN 1 ELSE 0 END), 0) AS n
         ${FROM} WHERE t.task_id = ? AND t.turn < ?`,
      ).get(taskId, before) as { n: number };
      return r.n;
    },

    ofTask(taskId: string): TurnRow[] {
      return stmt(db, `${SELECT} WHERE t.task_id = ? ORDER BY t.turn`).all(taskId) as TurnRow[];
    },

    byDispatchId(dispatchId: string): TurnRow | undefined {
      return stmt(db, `${SELECT} WHERE t.dispatch_id = ?`).get(dispatchId) as TurnRow | undefined;
    },

    /** Pending dispatches whose next attempt is due at `now`, oldest first, at most 20. */
    dueDispatches(now: number): TurnRow[] {
      // The limit is written into the SQL: a bound LIMIT parameter measured 2–5× slower here (bench/).
      return stmt(db, `${SELECT} WHERE t.dispatch_state = 'pending' AND t.next_attempt_at <= ? ORDER BY t.next_attempt_at LIMIT 20`).all(now) as TurnRow[];
    },
  };
}

export function turnWrites(w: Writer) {
  return {
    /**
     * Inserts a turn; its dispatch starts `pending` (or as given, for a store written by hand). It
     * notes where its mail begins in the ledger (src/store/turn-ledger.ts), by row id, not by time.
     */
    insert(t: TurnRow): void {
      stmt(w.db,
        `INSERT INTO turns (task_id, turn, ask, reply_token, deadline_at, dispatch_id, envelope, dispatch_state,
           next_attempt_at, accepted_at, reply_status, reply_text, reply_ledger_id, replied_at, created_at, ledger_after)
         VALUES (@taskId, @turn, @ask, @replyToken, @deadlineAt, @dispatchId, @envelope, @dispatchState,
           @nextAttemptAt, @acceptedAt, @replyStatus, @replyText, @replyLedgerId, @repliedAt, @createdAt, ${LEDGER_AFTER_SQL})`,
      ).run(t);
    },

    /** Revokes every live token of a task (a canceled task, a new turn, an applied reply). */
    revokeTokens(taskId: string): void {
      stmt(w.db, `UPDATE turns SET reply_token = NULL WHERE task_id = ? AND reply_token IS NOT NULL`).run(taskId);
    },

    /**
     * Records the reply on its turn. Its text is kept here only when no reply row holds it (write
     * the reply row first: src/core/apply-reply.ts); otherwise reads take it from there (the text is
     * stored once).
     */
    recordReply(taskId: string, turn: number, r: { status: ReplyStatus; text: string | null; ledgerId: number; at: number; revokeToken: boolean }): void {
      stmt(w.db,
        `UPDATE turns SET reply_status = @status, reply_ledger_id = @ledgerId, replied_at = @at,
           reply_text = CASE WHEN EXISTS (SELECT 1 FROM replies WHERE ledger_id = @ledgerId) THEN NULL ELSE @text END
           ${r.revokeToken ? ', reply_token = NULL' : ''} WHERE task_id = @taskId AND turn = @turn`,
      ).run({ status: r.status, ledgerId: r.ledgerId, at: r.at, text: r.text, taskId, turn });
    },
  };
}

/** The current dispatch state of a turn's webhook; undefined for no turn's dispatch (a cancel notice's id, say). */
function dispatchStateOf(db: Db, dispatchId: string): DispatchState | undefined {
  return (stmt(db, `SELECT dispatch_state AS s FROM turns WHERE dispatch_id = ?`).get(dispatchId) as { s: DispatchState } | undefined)?.s;
}

function currentState(db: Db, dispatchId: string): DispatchState {
  const s = dispatchStateOf(db, dispatchId);
  if (s === undefined) throw new Error(`no turn has the dispatch ${dispatchId}`);
  return s;
}

/** Moves of a turn's dispatch, each through the dispatch state machine (src/store/dispatch-state.ts). */
export function dispatchWrites(w: Writer) {
  const writes = {
    /**
     * Moves a dispatch to `to` (pending → pending reschedules it at `nextAttemptAt`).
     * @throws IllegalDispatchMoveError when the table has no such move (a defect)
     */
    move(dispatchId: string, to: DispatchState, s: { nextAttemptAt: number | null; acceptedAt?: number }): void {
      assertDispatchMove(dispatchId, currentState(w.db, dispatchId), to);
      stmt(w.db, `UPDATE turns SET dispatch_state = ?, next_attempt_at = ?, accepted_at = COALESCE(?, accepted_at) WHERE dispatch_id = ?`).run(
        to,
        s.nextAttemptAt,
        s.acceptedAt ?? null,
        dispatchId,
      );
    },

    /**
     * The operator's retry (the `redispatch` edge, failed → pending): the turn gets a new dispatch —
     * a new `webhook-id`, envelope and live token — pending from `at`. Earlier attempts stay
     * recorded under the old `webhook-id`.
     * @throws IllegalDispatchMoveError when the turn's dispatch is not `failed`
     */
    redispatch(taskId: string, turn: number, d: { fromDispatchId: string; dispatchId: string; envelope: Buffer; replyToken: string; deadlineAt: number; at: number }): void {
      assertDispatchMove(d.fromDispatchId, currentState(w.db, d.fromDispatchId), 'pending', 'redispatch');
      stmt(w.db,
        `UPDATE turns SET dispatch_id = ?, envelope = ?, reply_token = ?, deadline_at = ?, dispatch_state = 'pending',
           next_attempt_at = ?, accepted_at = NULL WHERE task_id = ? AND turn = ?`,
      ).run(d.dispatchId, d.envelope, d.replyToken, d.deadlineAt, d.at, taskId, turn);
    },

    /**
     * Start-up recovery: attempts left unfinished by a process that died are closed as
     * interrupted, and their dispatches, still pending, are due at once (at least once, same
     * `webhook-id`).
     * @returns the number of interrupted attempts
     */
    recoverInterrupted(at: number): number {
      const open = stmt(w.db, `SELECT id, dispatch_id AS dispatchId FROM dispatch_attempts WHERE finished_at IS NULL`).all() as { id: number; dispatchId: string }[];
      for (const a of open) {
        stmt(w.db, `UPDATE dispatch_attempts SET finished_at = ?, outcome = 'retry', error = 'interrupted: the process stopped during the attempt' WHERE id = ?`).run(at, a.id);
        if (dispatchStateOf(w.db, a.dispatchId) === 'pending') writes.move(a.dispatchId, 'pending', { nextAttemptAt: at });
      }
      return open.length;
    },
  };
  return writes;
}

export type TurnReads = ReturnType<typeof turnReads>;
