import { BridgeError } from './errors.js';
import type { AgentConfig } from '../config/config.js';
import { mayHaveReachedAgent, postWebhook, type DeliveryResult } from '../downlink/deliver.js';
import { encodeEnvelope, type Envelope } from '../downlink/envelope.js';
import { webhookHeaders } from '../downlink/sign.js';
import { isTerminal } from '../store/task-state.js';
import type { StoreReads } from '../store/store.js';
import type { TaskRow } from '../store/task-rows.js';
import type { BridgeContext } from './context.js';

/**
 * CancelTask (A2A v1.0 §3.1.5): revokes the reply tokens (a later reply resolves to `bad-token`
 * and is recorded, never applied), stops a pending dispatch, and records the cause. A task in any
 * terminal state, a canceled one included, is not cancelable (§3.1.5: TaskNotCancelableError
 * "e.g., already completed, failed, or canceled").
 *
 * @returns the task as the commit left it, and `received`: whether the agent may have the job, as
 *   the store tells before the cancel ({@link agentMayHaveJob})
 * @throws BridgeError task-not-found (unknown, or another agent's task), task-not-cancelable (a terminal state)
 */
export function cancelTask(
  ctx: BridgeContext,
  agent: AgentConfig,
  taskId: string,
  cause = 'canceled by the caller',
): { task: TaskRow; changed: boolean; received: boolean } {
  return ctx.store.tx((tx) => {
    const task = tx.tasks.get(taskId);
    if (!task || task.agent !== agent.name) throw new BridgeError('task-not-found', `Task ${taskId} not found`);
    if (isTerminal(task.state)) throw new BridgeError('task-not-cancelable', notCancelable(task));
    const received = agentMayHaveJob(tx, task.id);
    const turn = tx.turns.get(task.id, task.turn);
    if (turn?.dispatchState === 'pending') tx.dispatch.move(turn.dispatchId, 'canceled', { nextAttemptAt: null });
    tx.turns.revokeTokens(task.id);
    return { task: tx.tasks.transition(task, 'CANCELED', { at: ctx.now(), cause, deadlineAt: null }), changed: true, received };
  });
}

/**
 * Whether the agent may have a task's job: a webhook of one of its turns was accepted (the
 * dispatch state `accepted`: a 2xx, or a reply came; src/store/dispatch-state.ts), an attempt is
 * in flight (no outcome yet: its POST may be accepted after the cancel, or was when the process
 * died), or an attempt ended so that it cannot be told (a timeout: downlink/deliver.ts
 * mayHaveReachedAgent). False when no attempt was made, or each was turned away by the webhook's
 * answer (4xx, 5xx) or never connected (refused, no such host).
 */
function agentMayHaveJob(db: Pick<StoreReads, 'turns' | 'attempts'>, taskId: string): boolean {
  if (db.turns.ofTask(taskId).some((t) => t.dispatchState === 'accepted')) return true;
  return db.attempts.ofTask(taskId).some((a) => a.outcome === null || mayHaveReachedAgent({ outcome: a.outcome, httpStatus: a.httpStatus, error: a.error }));
}

/**
 * Why a task in a terminal state cannot be canceled, in words for that state: the caller's
 * TaskNotCancelableError message (A2A v1.0 §3.1.5; the code stays -32002, src/a2a/errors.ts).
 * A canceled task is "already canceled", not a task that "cannot be canceled".
 */
export function notCancelable(task: Pick<TaskRow, 'id' | 'state'>): string {
  switch (task.state) {
    case 'CANCELED':
      return `Task ${task.id} is already canceled; there is nothing more to cancel`;
    case 'COMPLETED':
      return `Task ${task.id} cannot be canceled: it is already completed`;
    case 'FAILED':
      return `Task ${task.id} cannot be canceled: it has already failed`;
    case 'REJECTED':
      return `Task ${task.id} cannot be canceled: the agent already rejected it`;
    default:
      return `Task ${task.id} cannot be canceled: it is ${task.state}`;
  }
}

/** What {@link cancelAndNotify} did: the task as the commit left it, and the cancel notice under way. */
export interface Canceled {
  task: TaskRow;
  /**
   * False when the agent never received the job (no webhook of the task was accepted, and every
   * attempt was turned away or never connected: {@link cancelTask}): no cancel notice is sent,
   * there is nothing for it to stop.
   */
  received: boolean;
  /**
   * The cancel notice's POST, under way (settles with its result, or null when the task has no
   * turn to base it on; rejects on a store error); null when `notify_cancel` is off for the agent,
   * or the agent never received the job (`received` false).
   */
  notice: Promise<DeliveryResult | null> | null;
}

/**
 * The whole cancel, as A2A CancelTask (Bridge.cancel) and the operator's `a2a-mailbridge cancel`
 * both do it: {@link cancelTask} in one transaction, the `task canceled` log line, then the cancel
 * notice started when the agent's `notify_cancel` is on and the agent may have the job (a notice
 * for a job whose webhook was never accepted would wake the agent for a task it never had). The
 * caller decides whether to wait for the notice (the CLI does, to say what came of it) or leave it
 * in the background (the bridge).
 *
 * @param cause the cause recorded, shown as the CANCELED status text (`Canceled: <cause>.`)
 * @throws BridgeError task-not-found, task-not-cancelable (see {@link cancelTask})
 */
export function cancelAndNotify(ctx: BridgeContext, agent: AgentConfig, taskId: string, cause?: string): Canceled {
  const { task, received } = cancelTask(ctx, agent, taskId, cause);
  ctx.log.info({ task: task.id, agent: agent.name, received }, 'task canceled');
  return { task, received, notice: agent.webhook.notifyCancel && received ? sendCancelNotice(ctx, agent, task) : null };
}

/**
 * The optional cancel notice (`agents.webhook.notify_cancel`): one best-effort POST of
 * the current turn's envelope with `cancel: true`, signed like a dispatch under its own
 * `webhook-id` (`cancel_<task id without dashes>`) and recorded as an attempt. It is not retried:
 * the task is canceled whatever the agent answers, and a reply it still sends resolves to
 * `bad-token` (the token was revoked).
 *
 * @returns what the POST came to; null when the task has no turn (nothing is sent)
 * @throws StoreError when the attempt cannot be recorded
 */
export async function sendCancelNotice(ctx: BridgeContext, agent: AgentConfig, task: TaskRow): Promise<DeliveryResult | null> {
  const turn = ctx.store.turns.ofTask(task.id).at(-1);
  if (!turn) return null;
  const envelope: Envelope = {
    ...(JSON.parse(turn.envelope.toString('utf8')) as Envelope),
    cancel: true,
    constraints: `Task ${task.id} was canceled (${task.stateReason ?? 'canceled'}). Stop work on it; no reply is expected.`,
  };
  const body = encodeEnvelope(envelope);
  const dispatchId = cancelNoticeId(task.id);
  const attempt = ctx.store.tx((tx) => tx.attempts.start({ dispatchId, taskId: task.id, turn: turn.turn, at: ctx.now() }));
  const headers = webhookHeaders(agent.webhook, dispatchId, body, new Date(ctx.now()));
  const r = await postWebhook(agent.webhook.url, headers, body, agent.webhook.timeoutMs, ctx.dispatcher, ctx.now);
  ctx.metrics?.attempts.inc({ outcome: r.outcome, kind: 'cancel' });
  ctx.store.tx((tx) => tx.attempts.finish(attempt.id, { at: ctx.now(), outcome: r.outcome, httpStatus: r.httpStatus, error: r.error }));
  ctx.log.info({ task: task.id, dispatchId, outcome: r.outcome, status: r.httpStatus }, 'cancel notice');
  return r;
}

/** The `webhook-id` of a task's cancel notice (one per task: a task is canceled once). */
export function cancelNoticeId(taskId: string): string {
  return `cancel_${taskId.replaceAll('-', '')}`;
}
