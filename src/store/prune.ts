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
import { TERMINAL_STATES } from './task-state.js';

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

export function pruneReads(db: Db) {
  return {
    /**
     * What `prune` would delete for this cut; reads only, so a read-only store will do.
     * @param cut ms since the epoch: tasks finished before it and ledger rows seen before it
     */
    countPrunable(cut: number): PruneCounts {
      const out = empty();
      for (const [key, table, where] of TARGETS) out[key] = (db.prepare(`SELECT count(*) AS n FROM ${table} WHERE ${where}`).get({ cut }) as { n: number }).n;
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
