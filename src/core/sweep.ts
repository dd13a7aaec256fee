import type { BridgeContext } from './context.js';
import { iso } from './time.js';

/**
 * The deadline sweep (docs/architecture.md, "The task state machine"): every task awaiting the
 * agent past its turn's deadline becomes FAILED with the reason. The turn's reply token stays live,
 * so an authenticated late reply is recognised and kept (`late:recorded`), never thrown away
 * (docs/architecture.md, "The task state machine"). A dispatch still pending stops retrying.
 *
 * @returns the ids of the tasks it failed
 */
export function sweepDeadlines(ctx: BridgeContext): string[] {
  const { store } = ctx;
  const failed: string[] = [];
  for (const candidate of store.tasks.overdue(ctx.now())) {
    store.tx((tx) => {
      const now = ctx.now();
      const task = tx.tasks.get(candidate.id);
      if (!task || (task.state !== 'SUBMITTED' && task.state !== 'WORKING') || task.deadlineAt === null || task.deadlineAt >= now) return;
      const turn = tx.turns.get(task.id, task.turn);
      if (turn?.dispatchState === 'pending') tx.dispatch.move(turn.dispatchId, 'failed', { nextAttemptAt: null });
      const cause =
        task.state === 'SUBMITTED'
          ? `deadline ${iso(task.deadlineAt)} passed before the webhook was accepted`
          : `deadline ${iso(task.deadlineAt)} passed with no reply from ${task.agent}`;
      tx.tasks.transition(task, 'FAILED', { at: now, cause, failedBy: 'deadline' });
      failed.push(task.id);
    });
  }
  if (failed.length) ctx.log.warn({ tasks: failed }, 'deadline passed: tasks FAILED');
  return failed;
}
