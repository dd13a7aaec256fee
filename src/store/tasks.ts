import type { Db } from './db.js';
import { stmt } from './statements.js';
import { assertTransition, IllegalTransitionError, isTerminal, type FailedBy, type TaskState } from './task-state.js';

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
  /** When a caller was first shown the terminal state (ms); null before (or while open). Read-only here. */
  outcomeShownAt?: number | null;
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

export function insertTask(db: Db, t: TaskRow): void {
  stmt(db, 
    `INSERT INTO tasks (id, agent, context_id, state, state_reason, failed_by, turn, caller, created_at, updated_at, deadline_at)
     VALUES (@id, @agent, @contextId, @state, @stateReason, @failedBy, @turn, @caller, @createdAt, @updatedAt, @deadlineAt)`,
  ).run(t);
  stmt(db, `INSERT INTO task_events (task_id, at, from_state, to_state, cause) VALUES (?, ?, NULL, ?, ?)`).run(
    t.id,
    t.createdAt,
    t.state,
    t.stateReason ?? 'task created',
  );
}

/** Marks a terminal task's outcome as shown to a caller (the first time only). */
export function markOutcomeShown(db: Db, taskId: string, at: number): void {
  stmt(db, `UPDATE tasks SET outcome_shown_at = ? WHERE id = ? AND outcome_shown_at IS NULL`).run(at, taskId);
}

export function getTask(db: Db, id: string): TaskRow | undefined {
  const r = stmt(db, `SELECT * FROM tasks WHERE id = ?`).get(id) as RawTask | undefined;
  return r && toRow(r);
}

/** The newest task of a context for one agent (contexts are scoped per agent: BRIEF §7). */
export function latestTaskOfContext(db: Db, agent: string, contextId: string): TaskRow | undefined {
  const r = stmt(db, `SELECT * FROM tasks WHERE agent = ? AND context_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1`)
    .get(agent, contextId) as RawTask | undefined;
  return r && toRow(r);
}

/** Open tasks whose current turn's deadline is before `now`, awaiting the agent. */
export function overdueTasks(db: Db, now: number): TaskRow[] {
  return (
    stmt(db, `SELECT * FROM tasks WHERE state IN ('SUBMITTED','WORKING') AND deadline_at IS NOT NULL AND deadline_at < ?`)
      .all(now) as RawTask[]
  ).map(toRow);
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

/** Tasks newest status first, with the total matching count (ignoring the cursor). */
export function listTasks(db: Db, f: TaskFilter): { rows: TaskRow[]; total: number } {
  const where: string[] = ['agent = @agent'];
  const params: Record<string, unknown> = { agent: f.agent, limit: f.limit };
  if (f.contextId !== undefined) {
    where.push('context_id = @contextId');
    params.contextId = f.contextId;
  }
  if (f.state !== undefined) {
    where.push('state = @state');
    params.state = f.state;
  }
  if (f.updatedAfter !== undefined) {
    where.push('updated_at > @updatedAfter');
    params.updatedAfter = f.updatedAfter;
  }
  const base = where.join(' AND ');
  const total = (stmt(db, `SELECT count(*) AS n FROM tasks WHERE ${base}`).get(params) as { n: number }).n;
  let page = base;
  if (f.before) {
    page += ' AND (updated_at < @bu OR (updated_at = @bu AND id < @bid))';
    params.bu = f.before.updatedAt;
    params.bid = f.before.id;
  }
  const rows = (
    stmt(db, `SELECT * FROM tasks WHERE ${page} ORDER BY updated_at DESC, id DESC LIMIT @limit`).all(params) as RawTask[]
  ).map(toRow);
  return { rows, total };
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
}

/**
 * Moves a task to `to` through the state machine, records the cause in `task_events`, and
 * writes the audit entry when `to` is terminal. Call inside an {@link immediate} transaction.
 *
 * @throws IllegalTransitionError when the move is not in the table (a programming error).
 */
export function transition(db: Db, task: TaskRow, to: TaskState, o: TransitionOptions): TaskRow {
  assertTransition(task.id, task.state, to);
  const next: TaskRow = {
    ...task,
    state: to,
    stateReason: o.cause,
    failedBy: to === 'FAILED' ? (o.failedBy ?? 'agent') : null,
    updatedAt: Math.max(o.at, task.updatedAt + 1),
    deadlineAt: o.deadlineAt === undefined ? task.deadlineAt : o.deadlineAt,
    turn: o.turn ?? task.turn,
  };
  stmt(db, 
    `UPDATE tasks SET state = @state, state_reason = @stateReason, failed_by = @failedBy, updated_at = @updatedAt,
       deadline_at = @deadlineAt, turn = @turn WHERE id = @id`,
  ).run(next);
  stmt(db, `INSERT INTO task_events (task_id, at, from_state, to_state, cause) VALUES (?, ?, ?, ?, ?)`).run(
    task.id,
    o.at,
    task.state,
    to,
    o.cause,
  );
  if (isTerminal(to)) writeAudit(db, next, o.at);
  return next;
}

/** Records a note against a task without a state move (e.g. a late reply kept after a deadline failure). */
export function noteEvent(db: Db, task: TaskRow, at: number, cause: string): void {
  stmt(db, `INSERT INTO task_events (task_id, at, from_state, to_state, cause) VALUES (?, ?, ?, ?, ?)`).run(
    task.id,
    at,
    task.state,
    task.state,
    cause,
  );
}

export interface TaskEvent {
  at: number;
  fromState: TaskState | null;
  toState: TaskState;
  cause: string;
}

export function taskEvents(db: Db, taskId: string): TaskEvent[] {
  return stmt(db, `SELECT at, from_state AS fromState, to_state AS toState, cause FROM task_events WHERE task_id = ? ORDER BY id`)
    .all(taskId) as TaskEvent[];
}

/**
 * The audit entry: written exactly once, when the task first reaches a terminal state (issue 4).
 * It names who asked, the agent, the turns, every ledger verdict for the task and the cause.
 */
function writeAudit(db: Db, task: TaskRow, at: number): void {
  const turns = stmt(db, `SELECT turn, dispatch_id AS dispatchId, dispatch_state AS dispatchState, reply_status AS replyStatus FROM turns WHERE task_id = ? ORDER BY turn`)
    .all(task.id);
  const verdicts = stmt(db, `SELECT id, message_id AS messageId, verdict, seen_at AS seenAt FROM ledger WHERE task_id = ? ORDER BY id`)
    .all(task.id);
  const entry = {
    task: task.id,
    agent: task.agent,
    contextId: task.contextId,
    caller: task.caller,
    state: task.state,
    cause: task.stateReason,
    failedBy: task.failedBy,
    createdAt: new Date(task.createdAt).toISOString(),
    endedAt: new Date(at).toISOString(),
    turns,
    verdicts,
  };
  stmt(db, 
    `INSERT INTO audit (task_id, seq, state, written_at, entry)
     VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM audit WHERE task_id = ?), ?, ?, ?)`,
  ).run(task.id, task.id, task.state, at, JSON.stringify(entry));
}

/** The newest audit entry of a task (there is one per arrival at a terminal state). */
export function getAudit(db: Db, taskId: string): Record<string, unknown> | undefined {
  const r = stmt(db, `SELECT entry FROM audit WHERE task_id = ? ORDER BY seq DESC LIMIT 1`).get(taskId) as { entry: string } | undefined;
  return r && (JSON.parse(r.entry) as Record<string, unknown>);
}

/**
 * The one exception to sticky terminal states: an operator's `retry` (issue 5) reopens a task
 * that FAILED because its webhook was never accepted — the agent never had the job, so nothing
 * it said can be overridden. Any other FAILED task, and every other terminal state, is refused.
 *
 * @throws IllegalTransitionError for a task that did not fail by dispatch
 */
export function reopenAfterDispatchFailure(db: Db, task: TaskRow, o: { at: number; cause: string; deadlineAt: number }): TaskRow {
  if (task.state !== 'FAILED' || task.failedBy !== 'dispatch') throw new IllegalTransitionError(task.id, task.state, 'SUBMITTED');
  const next: TaskRow = { ...task, state: 'SUBMITTED', stateReason: o.cause, failedBy: null, updatedAt: Math.max(o.at, task.updatedAt + 1), deadlineAt: o.deadlineAt };
  stmt(db, 
    `UPDATE tasks SET state = @state, state_reason = @stateReason, failed_by = NULL, updated_at = @updatedAt, deadline_at = @deadlineAt, outcome_shown_at = NULL WHERE id = @id`,
  ).run(next);
  stmt(db, `INSERT INTO task_events (task_id, at, from_state, to_state, cause) VALUES (?, ?, 'FAILED', 'SUBMITTED', ?)`).run(task.id, o.at, o.cause);
  return next;
}

/** Filters of {@link listTaskRows}; every field narrows, none is required. */
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

/**
 * Tasks of every agent (the CLI's `tasks`), newest status first (`updatedAt` descending, then
 * `id` descending), unlike {@link listTasks}, which is scoped to one agent for the A2A surface.
 */
export function listTaskRows(db: Db, q: TaskRowQuery): TaskRow[] {
  const where: string[] = [];
  const params: Record<string, unknown> = { limit: q.limit };
  if (q.agent !== undefined) {
    where.push('agent = @agent');
    params.agent = q.agent;
  }
  if (q.states !== undefined) {
    const names = q.states.map((s, i) => ((params[`s${i}`] = s), `@s${i}`));
    where.push(names.length ? `state IN (${names.join(', ')})` : '0');
  }
  if (q.contextId !== undefined) {
    where.push('context_id = @contextId');
    params.contextId = q.contextId;
  }
  if (q.updatedSince !== undefined) {
    where.push('updated_at >= @since');
    params.since = q.updatedSince;
  }
  const sql = `SELECT * FROM tasks ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY updated_at DESC, id DESC LIMIT @limit`;
  return (stmt(db, sql).all(params) as RawTask[]).map(toRow);
}

/** Ids of the tasks whose id starts with `prefix` (exact characters, no wildcards), at most `limit`, sorted. */
export function taskIdsWithPrefix(db: Db, prefix: string, limit: number): string[] {
  return (
    stmt(db, `SELECT id FROM tasks WHERE substr(id, 1, ?) = ? ORDER BY id LIMIT ?`).all(prefix.length, prefix, limit) as { id: string }[]
  ).map((r) => r.id);
}

/** Number of tasks per state (states with no task are absent). */
export function taskCountsByState(db: Db): Partial<Record<TaskState, number>> {
  const out: Partial<Record<TaskState, number>> = {};
  for (const r of stmt(db, `SELECT state, count(*) AS n FROM tasks GROUP BY state`).all() as { state: TaskState; n: number }[]) out[r.state] = r.n;
  return out;
}

/** One audit entry as stored: which terminal state it records, when it was written (ms), and the entry. */
export interface AuditRow {
  seq: number;
  state: TaskState;
  writtenAt: number;
  entry: Record<string, unknown>;
}

/** Every audit entry of a task, oldest first (one per arrival at a terminal state); empty when none. */
export function auditRows(db: Db, taskId: string): AuditRow[] {
  const rows = stmt(db, `SELECT seq, state, written_at AS writtenAt, entry FROM audit WHERE task_id = ? ORDER BY seq`).all(taskId) as
    (Omit<AuditRow, 'entry'> & { entry: string })[];
  return rows.map((r) => ({ ...r, entry: JSON.parse(r.entry) as Record<string, unknown> }));
}
