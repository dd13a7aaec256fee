import { randomUUID } from 'node:crypto';
import { BridgeError } from './errors.js';
import type { AgentConfig } from '../config/config.js';
import { encodeEnvelope, replyInstructions, type Envelope } from '../downlink/envelope.js';
import type { TaskRow } from '../store/task-rows.js';
import type { BridgeContext } from './context.js';
import { iso } from './time.js';
import { mintToken } from './token.js';

/**
 * `a2a-mailbridge retry <task>`: re-dispatches a task whose webhook was never accepted.
 * The envelope keeps the turn, ask and thread; it gets a fresh token, a new deadline and a new
 * `webhook-id` (a receiver that dedupes by id must not drop it). The task goes back to SUBMITTED
 * along the task state machine's `operator-retry` edge, the dispatch along its `redispatch` edge.
 *
 * @returns the reopened task and the new dispatch id, for an immediate attempt
 * @throws BridgeError task-not-found; task-closed when the task did not fail by dispatch
 */
export function retryDispatch(ctx: BridgeContext, agent: AgentConfig, taskId: string): { task: TaskRow; dispatchId: string } {
  return ctx.store.tx((tx) => {
    const task = tx.tasks.get(taskId);
    if (!task || task.agent !== agent.name) throw new BridgeError('task-not-found', `Task ${taskId} not found`);
    const turn = tx.turns.get(task.id, task.turn);
    if (task.state !== 'FAILED' || task.failedBy !== 'dispatch' || !turn || turn.dispatchState !== 'failed') {
      throw new BridgeError(
        'task-closed',
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
      constraints: replyInstructions({ replyTo: before.reply_to, from: agent.address, subjectTag: before.subject_tag, token, deadline: iso(deadlineAt), maxAttachmentBytes: ctx.config.mailbox.maxAttachmentBytes }),
    };
    const dispatchId = `msg_${randomUUID().replaceAll('-', '')}`;
    tx.dispatch.redispatch(task.id, turn.turn, { fromDispatchId: turn.dispatchId, dispatchId, envelope: encodeEnvelope(envelope), replyToken: token, deadlineAt, at: now });
    const reopened = tx.tasks.transition(task, 'SUBMITTED', { at: now, cause: `retried by the operator (new webhook-id ${dispatchId})`, deadlineAt, edge: 'operator-retry' });
    return { task: reopened, dispatchId };
  });
}
