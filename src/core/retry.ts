import { randomUUID } from 'node:crypto';
import { A2AError } from '../a2a/errors.js';
import type { AgentConfig } from '../config/config.js';
import { encodeEnvelope, replyInstructions, type Envelope } from '../downlink/envelope.js';
import { immediate } from '../store/db.js';
import { getTask, reopenAfterDispatchFailure, type TaskRow } from '../store/tasks.js';
import { getTurn, replaceDispatch } from '../store/turns.js';
import type { BridgeContext } from './context.js';
import { iso } from './time.js';
import { mintToken } from './token.js';

/**
 * `a2a-mailbridge retry <task>` (issue 5): re-dispatches a task whose webhook was never accepted.
 * The envelope keeps the turn, ask and thread; it gets a fresh token, a new deadline and a new
 * `webhook-id` (a receiver that dedupes by id must not drop it). The task goes back to SUBMITTED.
 *
 * @returns the reopened task and the new dispatch id, for an immediate attempt
 * @throws A2AError taskNotFound; unsupportedOperation when the task did not fail by dispatch
 */
export function retryDispatch(ctx: BridgeContext, agent: AgentConfig, taskId: string): { task: TaskRow; dispatchId: string } {
  const { db } = ctx;
  return immediate(db, () => {
    const task = getTask(db, taskId);
    if (!task || task.agent !== agent.name) throw new A2AError('taskNotFound', `Task ${taskId} not found`);
    const turn = getTurn(db, task.id, task.turn);
    if (task.state !== 'FAILED' || task.failedBy !== 'dispatch' || !turn || turn.dispatchState !== 'failed') {
      throw new A2AError(
        'unsupportedOperation',
        `task ${taskId} is ${task.state.toLowerCase()}${task.failedBy ? ` (failed by ${task.failedBy})` : ''}; only a task that failed by dispatch (attempts exhausted, or refused by the webhook) can be retried`,
      );
    }
    const now = ctx.now();
    const token = mintToken();
    const deadlineAt = now + agent.deadlineMs;
    const before = JSON.parse(turn.envelope.toString('utf8')) as Envelope;
    const envelope: Envelope = {
      ...before,
      reply_token: token,
      deadline: iso(deadlineAt),
      constraints: replyInstructions({ replyTo: before.reply_to, subjectTag: before.subject_tag, token, deadline: iso(deadlineAt) }),
    };
    const dispatchId = `msg_${randomUUID().replaceAll('-', '')}`;
    replaceDispatch(db, task.id, turn.turn, { dispatchId, envelope: encodeEnvelope(envelope), replyToken: token, deadlineAt, at: now });
    const reopened = reopenAfterDispatchFailure(db, task, { at: now, cause: `retried by the operator (new webhook-id ${dispatchId})`, deadlineAt });
    return { task: reopened, dispatchId };
  });
}
