/**
 * Retention (`a2a-mailbridge prune`): finished tasks and old ledger rows go; an open
 * task — and every row it relies on — stays, however old.
 *
 * A task is prunable when its state is terminal, its status timestamp (`updated_at`, when it
 * finished) is before the cut, and no task event is newer than the cut — a deadline-failed task
 * that kept a late reply yesterday (a note event) stays. (Terminal states are sticky; the one
 * exception, an operator's `retry` of a task that failed by dispatch, runs in its own transaction
 * and then finds the task gone, or prune finds it open.) It goes with its turns, dispatch
 * attempts, messages, artifacts, replies (with their attachments) and task events. Its audit entries stay: the audit is the record
 * of what happened, and `show` still prints it for a pruned task.
 *
 * A ledger row is prunable when it was seen before the cut and belongs to no task that stays
 * (no task, an unknown task, or a prunable one). So the rows behind gate 1 (same raw bytes) and
 * gate 8a (Message-ID already applied) are kept for every open task.
 */
import type { Db, Writer } from './db.js';
import { stmt } from './statements.js';
import { TASK_STATES, TERMINAL_STATES } from './task-state.js';

/** Rows deleted (or, for a dry run, that would be) per table. */
export interface PruneCounts {
  tasks: number;
  turns: number;
  attempts: number;
  messages: number;
  artifacts: number;
  replies: number;
  attachments: number;
  events: number;
  ledger: number;
}

const TERMINAL = [...TERMINAL_STATES].map((s) => `'${s}'`).join(', ');
/** True for the task row `t` when it goes; `@cut` is the cut in ms since the epoch. */
const FINISHED_BEFORE_CUT = `(t.state IN (${TERMINAL}) AND t.updated_at < @cut
  AND NOT EXISTS (SELECT 1 FROM task_events e WHERE e.task_id = t.id AND e.at >= @cut))`;
/** Ids of the tasks that go. */
const PRUNABLE_TASKS = `SELECT t.id FROM tasks t WHERE ${FINISHED_BEFORE_CUT}`;
/** Ledger rows that go: older than the cut and not tied to a task that stays. */
const PRUNABLE_LEDGER = `seen_at < @cut AND (task_id IS NULL OR NOT EXISTS (
  SELECT 1 FROM tasks t WHERE t.id = ledger.task_id AND NOT ${FINISHED_BEFORE_CUT}))`;

/** Table and WHERE clause per count; the ledger clause must be evaluated before the tasks are deleted. */
const TARGETS: readonly [keyof PruneCounts, string, string][] = [
  ['ledger', 'ledger', PRUNABLE_LEDGER],
  ['turns', 'turns', `task_id IN (${PRUNABLE_TASKS})`],
  ['attempts', 'dispatch_attempts', `task_id IN (${PRUNABLE_TASKS})`],
  ['messages', 'messages', `task_id IN (${PRUNABLE_TASKS})`],
  ['artifacts', 'artifacts', `task_id IN (${PRUNABLE_TASKS})`],
  ['replies', 'replies', `task_id IN (${PRUNABLE_TASKS})`],
  ['attachments', 'reply_attachments', `task_id IN (${PRUNABLE_TASKS})`],
  ['events', 'task_events', `task_id IN (${PRUNABLE_TASKS})`],
  ['tasks', 'tasks', `id IN (${PRUNABLE_TASKS})`],
];

function empty(): PruneCounts {
  return { tasks: 0, turns: 0, attempts: 0, messages: 0, artifacts: 0, replies: 0, attachments: 0, events: 0, ledger: 0 };
}

/** The tables a task's rows live in, with the count of each that migration 11's triggers keep. */
const DEPENDENTS: readonly [keyof PruneCounts, string, string][] = [
  ['turns', 'turns', `SELECT coalesce(sum(n), 0) AS n FROM dispatch_counts`],
  ['attempts', 'dispatch_attempts', `SELECT n FROM row_counts WHERE name = 'dispatch_attempts'`],
  ['messages', 'messages', `SELECT n FROM row_counts WHERE name = 'messages'`],
  ['artifacts', 'artifacts', `SELECT n FROM row_counts WHERE name = 'artifacts'`],
  ['replies', 'replies', `SELECT n FROM row_counts WHERE name = 'replies'`],
  ['attachments', 'reply_attachments', `SELECT n FROM row_counts WHERE name = 'reply_attachments'`],
  ['events', 'task_events', `SELECT n FROM row_counts WHERE name = 'task_events'`],
];

/** Finished tasks whose status timestamp is before the cut, whatever their events (tasks_by_state_time). */
const FINISHED_BEFORE = `state IN (${TERMINAL}) AND updated_at < @cut`;
/** Tasks with an event at or after the cut (task_events_by_time): a finished one among them stays. */
const NOTED_SINCE = `SELECT task_id FROM task_events WHERE at >= @cut`;
const OPEN = TASK_STATES.filter((st) => !TERMINAL_STATES.has(st)).map((st) => `'${st}'`).join(', ');
/** The tasks that stay: open, finished at or after the cut, or noted since — each an index range. */
const STAYING = `SELECT id FROM tasks WHERE state IN (${OPEN}) UNION ALL SELECT id FROM tasks WHERE state IN (${TERMINAL}) AND updated_at >= @cut UNION ALL ${NOTED_SINCE}`;

export function pruneReads(db: Db) {
  const one = (sql: string, cut: number): number => (stmt(db, sql).get({ cut }) as { n: number } | undefined)?.n ?? 0;
  return {
    /**
     * What `prune` would delete for this cut; reads only, so a read-only store will do. The cost
     * follows the smaller of the tasks that go and the tasks that stay, never the whole store:
     * when most tasks go, each table's count (kept by triggers) less the rows of the tasks that
     * stay; else the rows of the tasks that go (every row of a table here belongs to a task: the
     * writes add them with their task, and prune deletes them with it). Bench: bench/RESULTS.md, million.
     * @param cut ms since the epoch: tasks finished before it and ledger rows seen before it
     */
    countPrunable(cut: number): PruneCounts {
      const out = empty();
      const finished = one(`SELECT count(*) AS n FROM tasks WHERE ${FINISHED_BEFORE}`, cut);
      const finishedNoted = one(`SELECT count(*) AS n FROM tasks WHERE ${FINISHED_BEFORE} AND id IN (${NOTED_SINCE})`, cut);
      out.tasks = finished - finishedNoted;
      const all = one(`SELECT coalesce(sum(n), 0) AS n FROM task_counts`, cut);
      const fewGo = out.tasks <= all - out.tasks;
      for (const [key, table, total] of DEPENDENTS) {
        out[key] = fewGo
          ? one(`SELECT count(*) AS n FROM ${table} WHERE task_id IN (${PRUNABLE_TASKS})`, cut)
          : one(total, cut) - one(`SELECT count(*) AS n FROM ${table} WHERE task_id IN (${STAYING})`, cut);
      }
      // Ledger rows seen before the cut (ledger_by_time), but those of a task that stays.
      const before = one(`SELECT count(*) AS n FROM ledger WHERE seen_at < @cut`, cut);
      out.ledger = fewGo
        ? one(`SELECT count(*) AS n FROM ledger WHERE ${PRUNABLE_LEDGER}`, cut)
        : before - one(`SELECT count(*) AS n FROM ledger WHERE seen_at < @cut AND task_id IN (${STAYING})`, cut);
      return out;
    },
  };
}

export function pruneWrites(w: Writer) {
  return {
    /**
     * Deletes finished tasks (with their rows) and old ledger rows; inside the caller's
     * transaction, so a running bridge sees all of it or none.
     * @param cut ms since the epoch: tasks finished before it and ledger rows seen before it
     * @returns the number of rows deleted per table
     */
    prune(cut: number): PruneCounts {
      const out = empty();
      // A pruned task's push configurations and deliveries go with it (uncounted: they hold no evidence).
      for (const table of ['push_deliveries', 'push_configs']) w.db.prepare(`DELETE FROM ${table} WHERE task_id IN (${PRUNABLE_TASKS})`).run({ cut });
      for (const [key, table, where] of TARGETS) out[key] = w.db.prepare(`DELETE FROM ${table} WHERE ${where}`).run({ cut }).changes;
      return out;
    },
  };
}
