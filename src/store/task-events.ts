import type { Db } from './db.js';
import { stmt } from './statements.js';
import type { TaskState } from './task-state.js';

/** One row of a task's history of changes: a move (`fromState` → `toState`), its creation (`fromState` null), or a note (the same state). */
export interface TaskEvent {
  at: number;
  fromState: TaskState | null;
  toState: TaskState;
  cause: string;
}

/** Appends a task event; written only by the task writes (src/store/task-rows.ts), inside their transaction. */
export function recordTaskEvent(db: Db, e: { taskId: string; at: number; from: TaskState | null; to: TaskState; cause: string }): void {
  stmt(db, `INSERT INTO task_events (task_id, at, from_state, to_state, cause) VALUES (?, ?, ?, ?, ?)`).run(e.taskId, e.at, e.from, e.to, e.cause);
}

export function taskEventReads(db: Db) {
  return {
    /** A task's events, oldest first. */
    of(taskId: string): TaskEvent[] {
      return stmt(db, `SELECT at, from_state AS fromState, to_state AS toState, cause FROM task_events WHERE task_id = ? ORDER BY id`).all(taskId) as TaskEvent[];
    },
  };
}
