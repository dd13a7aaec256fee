import { writeAudit } from './audit.js';
import type { Db, Writer } from './db.js';
import { conditions, stmt } from './statements.js';
import { queuePushes } from './push.js';
import { recordTaskEvent } from './task-events.js';
import { assertTransition, isTerminal, type FailedBy, type TaskState, type TransitionEdge } from './task-state.js';

/** One task row. Times in ms since the epoch. */
export interface TaskRow {
  id: string;
  agent: string;
  contextId: string;
  state: TaskState;
  /** Human cause of the latest state change (shown as `status.message` for FAILED/CANCELED). */
  stateReason: string | null;
  failedBy: FailedBy | null;
  /** The current turn, 1-based. */
  turn: number;
  caller: string | null;
  createdAt: number;
  /** The status timestamp: when `state` was last set. */
  updatedAt: number;
  /** The current turn's deadline; null while no turn is awaiting the agent. */
  deadlineAt: number | null;
  /** When a caller was first shown the terminal state (ms); null before (or while open). */
  outcomeShownAt?: number | null;
}

/**
 * One committed change of a task: its creation (`previous` null), a move through the state
 * machine, or a note without a move (`previous` equals `task.state`). The store hands these to
 * its listeners after the transaction commits (src/store/store.ts `onTaskChange`).
 */
export interface TaskChange {
  /** The task as the change left it. */
  task: TaskRow;
  previous: TaskState | null;
  cause: string;
  /** When the change was made, ms since the epoch. */
  at: number;
}

interface RawTask {
  id: string;
  agent: string;
  context_id: string;
  state: TaskState;
  state_reason: string | null;
  failed_by: FailedBy | null;
  turn: number;
  caller: string | null;
  created_at: number;
  updated_at: number;
  deadline_at: number | null;
  outcome_shown_at: number | null;
}

function toRow(r: RawTask): TaskRow {
  return {
    id: r.id,
    agent: r.agent,
    contextId: r.context_id,
    state: r.state,
    stateReason: r.state_reason,
    failedBy: r.failed_by,
    turn: r.turn,
    caller: r.caller,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    deadlineAt: r.deadline_at,
    outcomeShownAt: r.outcome_shown_at,
  };
}

export interface TaskFilter {
  agent: string;
  contextId?: string;
  state?: TaskState;
  /** Only tasks whose status timestamp is after this, in ms. */
  updatedAfter?: number;
  /** Keyset cursor: tasks strictly older than (updatedAt, id) in the newest-first order. */
  before?: { updatedAt: number; id: string };
  limit: number;
}

/** Filters of {@link taskReads} `rows`; every field narrows, none is required. */
export interface TaskRowQuery {
  agent?: string;
  /** Any of these states (an empty list matches nothing). */
  states?: readonly TaskState[];
  contextId?: string;
  /** Only tasks whose status timestamp (`updatedAt`) is at or after this, in ms. */
  updatedSince?: number;
  /** At most this many rows. */
  limit: number;
}

export interface TransitionOptions {
  at: number;
  /** Human cause, recorded in task_events and shown for FAILED/CANCELED tasks. */
  cause: string;
  failedBy?: FailedBy;
  /** New deadline (null clears it); unchanged when undefined. */
  deadlineAt?: number | null;
  /** New current turn; unchanged when undefined. */
  turn?: number;
  /** The named edge of the state machine this move takes (src/store/task-state.ts), if any. */
  edge?: TransitionEdge;
}

/** Reads of the `tasks` table. */
export function taskReads(db: Db) {
  return {
    get(id: string): TaskRow | undefined {
      const r = stmt(db, `SELECT * FROM tasks WHERE id = ?`).get(id) as RawTask | undefined;
      return r && toRow(r);
    },

    /** The newest task of a context for one agent (contexts are scoped per agent). */
    latestOfContext(agent: string, contextId: string): TaskRow | undefined {
      const r = stmt(db, `SELECT * FROM tasks WHERE agent = ? AND context_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1`).get(agent, contextId) as RawTask | undefined;
      return r && toRow(r);
    },

    /** Open tasks whose current turn's deadline is before `now`, awaiting the agent. */
    overdue(now: number): TaskRow[] {
      return (stmt(db, `SELECT * FROM tasks WHERE state IN ('SUBMITTED','WORKING') AND deadline_at IS NOT NULL AND deadline_at < ?`).all(now) as RawTask[]).map(toRow);
    },

    /**
     * One agent's tasks, newest status first, from the keyset cursor `before` on, and the total
     * matching count (ignoring the cursor). The total costs no scan when only the agent and the
     * state filter: the trigger-kept counts of migration 11 answer it. With other filters it counts
     * the index range once — `knownTotal` (the total the first page counted, carried by the page
     * token) skips that on later pages.
     */
    list(f: TaskFilter, knownTotal?: number): { rows: TaskRow[]; total: number } {
      const params: Record<string, unknown> = { agent: f.agent, limit: f.limit };
      const where = conditions(params, ['agent = @agent']);
      where.narrow('context_id = @contextId', 'contextId', f.contextId);
      where.narrow('state = @state', 'state', f.state);
      where.narrow('updated_at > @updatedAfter', 'updatedAfter', f.updatedAfter);
      const base = where.sql();
      let total: number;
      if (f.contextId === undefined && f.updatedAfter === undefined) {
        const sql = `SELECT coalesce(sum(n), 0) AS n FROM task_counts WHERE agent = @agent${f.state !== undefined ? ' AND state = @state' : ''}`;
        total = (stmt(db, sql).get(f.state !== undefined ? { agent: f.agent, state: f.state } : { agent: f.agent }) as { n: number }).n;
      } else if (knownTotal !== undefined) total = knownTotal;
      else {
        const { limit: _limit, ...countParams } = params;
        total = (stmt(db, `SELECT count(*) AS n FROM tasks WHERE ${base}`).get(countParams) as { n: number }).n;
      }
      let page = base;
      if (f.before) {
        page += ' AND (updated_at < @bu OR (updated_at = @bu AND id < @bid))';
        params.bu = f.before.updatedAt;
        params.bid = f.before.id;
      }
      const rows = (stmt(db, `SELECT * FROM tasks WHERE ${page} ORDER BY updated_at DESC, id DESC LIMIT @limit`).all(params) as RawTask[]).map(toRow);
      return { rows, total };
    },

    /**
     * Tasks of every agent (the CLI's `tasks`), newest status first (`updatedAt` descending, then
     * `id` descending), unlike `list`, which is scoped to one agent for the A2A surface.
     */
    rows(q: TaskRowQuery): TaskRow[] {
      const params: Record<string, unknown> = { limit: q.limit };
      const where = conditions(params);
      where.narrow('agent = @agent', 'agent', q.agent);
      where.narrow('context_id = @contextId', 'contextId', q.contextId);
      where.narrow('updated_at >= @since', 'since', q.updatedSince);
      const order = 'ORDER BY updated_at DESC, id DESC LIMIT @limit';
      const states = q.states === undefined ? undefined : [...new Set(q.states)];
      if (states?.length === 0) return [];
      let sql: string;
      if (states === undefined || states.length === 1) {
        if (states) where.narrow('state = @s0', 's0', states[0]);
        sql = `SELECT * FROM tasks ${where.sql() ? `WHERE ${where.sql()}` : ''} ${order}`;
      } else {
        // One ordered range per state (the tasks_by_state_time index), merged: `state IN (…)`
        // would sort every task in those states to return the newest few.
        const rest = where.sql() ? ` AND ${where.sql()}` : '';
        const parts = states.map((st, i) => {
          params[`s${i}`] = st;
          return `SELECT * FROM (SELECT * FROM tasks WHERE state = @s${i}${rest} ${order})`;
        });
        sql = `SELECT * FROM (${parts.join(' UNION ALL ')}) ${order}`;
      }
      return (stmt(db, sql).all(params) as RawTask[]).map(toRow);
    },

    /**
     * Ids of the tasks whose id starts with `prefix` (exact characters, no wildcards), at most
     * `limit`, sorted: a range of the primary key (every such id is ≥ `prefix` and below `prefix`
     * followed by U+10FFFF, in SQLite's binary order of UTF-8), not a scan.
     */
    idsWithPrefix(prefix: string, limit: number): string[] {
      const sql = `SELECT id FROM tasks WHERE id >= @p AND id < @p || char(1114111) AND substr(id, 1, length(@p)) = @p ORDER BY id LIMIT @limit`;
      return (stmt(db, sql).all({ p: prefix, limit }) as { id: string }[]).map((r) => r.id);
    },
  };
}

/** Writes of the `tasks` table; each records its task event and reports the change (see {@link TaskChange}). */
export function taskWrites(w: Writer) {
  return {
    /** Inserts a new task and its first event (`from_state` NULL). */
    insert(t: TaskRow): void {
      stmt(w.db,
        `INSERT INTO tasks (id, agent, context_id, state, state_reason, failed_by, turn, caller, created_at, updated_at, deadline_at)
         VALUES (@id, @agent, @contextId, @state, @stateReason, @failedBy, @turn, @caller, @createdAt, @updatedAt, @deadlineAt)`,
      ).run(t);
      const cause = t.stateReason ?? 'task created';
      recordTaskEvent(w.db, { taskId: t.id, at: t.createdAt, from: null, to: t.state, cause });
      w.changed({ task: { ...t, outcomeShownAt: null }, previous: null, cause, at: t.createdAt });
    },

    /**
     * Moves a task to `to` through the state machine (src/store/task-state.ts), records the
     * cause in `task_events`, and writes the audit entry when `to` is terminal (and empties its
     * turns' envelopes, but for a task canceled or failed by dispatch: see the statement). Leaving a
     * terminal state (the operator's retry) forgets that the outcome was shown.
     *
     * @throws IllegalTransitionError when the move is not in the table or its guard refuses (a defect)
     */
    transition(task: TaskRow, to: TaskState, o: TransitionOptions): TaskRow {
      assertTransition(task, to, o.edge);
      const reopened = isTerminal(task.state);
      const next: TaskRow = {
        ...task,
        state: to,
        stateReason: o.cause,
        failedBy: to === 'FAILED' ? (o.failedBy ?? 'agent') : null,
        updatedAt: Math.max(o.at, task.updatedAt + 1),
        deadlineAt: o.deadlineAt === undefined ? task.deadlineAt : o.deadlineAt,
        turn: o.turn ?? task.turn,
        ...(reopened ? { outcomeShownAt: null } : {}),
      };
      stmt(w.db,
        `UPDATE tasks SET state = @state, state_reason = @stateReason, failed_by = @failedBy, updated_at = @updatedAt,
           deadline_at = @deadlineAt, turn = @turn, outcome_shown_at = CASE WHEN @reopened THEN NULL ELSE outcome_shown_at END WHERE id = @id`,
      ).run({ ...next, reopened: reopened ? 1 : 0 });
      recordTaskEvent(w.db, { taskId: task.id, at: o.at, from: task.state, to, cause: o.cause });
      queuePushes(w.db, task.id, to, next.updatedAt, o.at);
      if (isTerminal(to)) writeAudit(w.db, next, o.at);
      // A completed, rejected or failed task's webhooks are never sent again: the signed bytes (a
      // used or revoked token, the ask and thread the turns keep anyway) go. A task failed by
      // dispatch keeps them for the operator's retry, a canceled one for its cancel notice (sent
      // after the commit: core/cancel.ts). Bytes per task: bench/RESULTS.md, million.
      if (isTerminal(to) && to !== 'CANCELED' && next.failedBy !== 'dispatch') stmt(w.db, `UPDATE turns SET envelope = x'' WHERE task_id = ? AND length(envelope) > 0`).run(task.id);
      w.changed({ task: next, previous: task.state, cause: o.cause, at: o.at });
      return next;
    },

    /** Records a note against a task without a state move (a late reply kept, a progress note). */
    note(task: TaskRow, at: number, cause: string): void {
      recordTaskEvent(w.db, { taskId: task.id, at, from: task.state, to: task.state, cause });
      queuePushes(w.db, task.id, task.state, at, at);
      w.changed({ task, previous: task.state, cause, at });
    },

    /** Marks a terminal task's outcome as shown to a caller (the first time only). */
    markOutcomeShown(taskId: string, at: number): void {
      stmt(w.db, `UPDATE tasks SET outcome_shown_at = ? WHERE id = ? AND outcome_shown_at IS NULL`).run(at, taskId);
    },
  };
}

export type TaskReads = ReturnType<typeof taskReads>;
export type TaskWrites = ReturnType<typeof taskWrites>;
