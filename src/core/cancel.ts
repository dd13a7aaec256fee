import { A2AError } from '../a2a/errors.js';
import type { AgentConfig } from '../config/config.js';
import { immediate } from '../store/db.js';
import { isTerminal } from '../store/task-state.js';
import { getTask, transition, type TaskRow } from '../store/tasks.js';
import { getTurn, revokeTokens, setDispatchState } from '../store/turns.js';
import type { BridgeContext } from './context.js';

/**
 * CancelTask (A2A v1.0 §3.1.5): revokes the reply tokens (a later reply resolves to `bad-token`
 * and is recorded, never applied), stops a pending dispatch, and records the cause. Idempotent on
 * a canceled task.
 *
 * @throws A2AError taskNotFound (unknown, or another agent's task), taskNotCancelable (another terminal state)
 */
export function cancelTask(ctx: BridgeContext, agent: AgentConfig, taskId: string, cause = 'canceled by the caller'): TaskRow {
  const { db } = ctx;
  return immediate(db, () => {
    const task = getTask(db, taskId);
    if (!task || task.agent !== agent.name) throw new A2AError('taskNotFound', `Task ${taskId} not found`);
    if (task.state === 'CANCELED') return task;
    if (isTerminal(task.state)) {
      throw new A2AError('taskNotCancelable', `Task ${taskId} is ${task.state.toLowerCase()} and cannot be canceled`);
    }
    const turn = getTurn(db, task.id, task.turn);
    if (turn?.dispatchState === 'pending') setDispatchState(db, turn.dispatchId, { state: 'canceled', nextAttemptAt: null });
    revokeTokens(db, task.id);
    return transition(db, task, 'CANCELED', { at: ctx.now(), cause, deadlineAt: null });
  });
}
