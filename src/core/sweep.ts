import { immediate } from '../store/db.js';
import { getTask, overdueTasks, transition } from '../store/tasks.js';
import { getTurn, setDispatchState } from '../store/turns.js';
import type { BridgeContext } from './context.js';
import { iso } from './time.js';

/**
 * The deadline sweep (BRIEF §6): every task awaiting the agent past its turn's deadline becomes
 * FAILED with the reason. The turn's reply token stays live, so an authenticated late reply is
 * recognised and kept (`late:recorded`), never thrown away (BRIEF §1, failure 2). A dispatch still
 * pending stops retrying.
 *
 * @returns the ids of the tasks it failed
 */
export function sweepDeadlines(ctx: BridgeContext): string[] {
  const { db } = ctx;
  const failed: string[] = [];
  for (const candidate of overdueTasks(db, ctx.now())) {
    immediate(db, () => {
      const now = ctx.now();
      const task = getTask(db, candidate.id);
      if (!task || (task.state !== 'SUBMITTED' && task.state !== 'WORKING') || task.deadlineAt === null || task.deadlineAt >= now) return;
      const turn = getTurn(db, task.id, task.turn);
      if (turn?.dispatchState === 'pending') setDispatchState(db, turn.dispatchId, { state: 'failed', nextAttemptAt: null });
      const cause =
        task.state === 'SUBMITTED'
          ? `deadline ${iso(task.deadlineAt)} passed before the webhook was accepted`
          : `deadline ${iso(task.deadlineAt)} passed with no reply from ${task.agent}`;
      transition(db, task, 'FAILED', { at: now, cause, failedBy: 'deadline' });
      failed.push(task.id);
    });
  }
  if (failed.length) ctx.log.warn({ tasks: failed }, 'deadline passed: tasks FAILED');
  return failed;
}
