import { postWebhook, backoffMs, type DeliveryResult } from '../downlink/deliver.js';
import { webhookHeaders } from '../downlink/sign.js';
import { plural } from '../plural.js';
import { agentByName, type BridgeContext } from './context.js';
import { failpoint } from './failpoints.js';

/** Extra time, in ms, beyond the webhook timeout before an in-flight attempt counts as lost (a crash) and is retried. */
const LEASE_MARGIN_MS = 30_000;

/**
 * One delivery attempt of a pending dispatch (docs/architecture.md, "The data path"). The attempt row and a lease
 * (`next_attempt_at` pushed past the timeout) are committed before the network call, so a crash
 * mid-flight leads to a resend with the same `webhook-id` after the lease, and a second caller
 * does not send concurrently. The outcome and any state change are committed in one transaction.
 *
 * @returns the delivery result, or null when nothing was due (already accepted, failed, canceled, leased)
 */
export async function attemptDispatch(ctx: BridgeContext, dispatchId: string): Promise<DeliveryResult | null> {
  const { store } = ctx;
  const claim = store.tx((tx) => {
    const turn = tx.turns.byDispatchId(dispatchId);
    if (!turn || turn.dispatchState !== 'pending') return null;
    const now = ctx.now();
    if (turn.nextAttemptAt !== null && turn.nextAttemptAt > now) return null;
    const task = tx.tasks.get(turn.taskId);
    if (!task) return null;
    const agent = agentByName(ctx.config, task.agent);
    if (!agent) {
      tx.dispatch.move(dispatchId, 'failed', { nextAttemptAt: null });
      return null;
    }
    if (task.state !== 'SUBMITTED' || task.turn !== turn.turn) {
      // The task moved on without this dispatch (canceled, swept, or a reply arrived first).
      tx.dispatch.move(dispatchId, task.state === 'CANCELED' ? 'canceled' : 'failed', { nextAttemptAt: null });
      return null;
    }
    const attempts = tx.attempts.of(dispatchId);
    const last = attempts.at(-1);
    if (attempts.length >= agent.webhook.maxAttempts || now - turn.createdAt > agent.webhook.maxAgeMs) {
      const limit =
        attempts.length >= agent.webhook.maxAttempts
          ? `max_attempts ${agent.webhook.maxAttempts}`
          : `max_age_s ${agent.webhook.maxAgeMs / 1000}`;
      const why = `dispatch exhausted after ${plural(attempts.length, 'attempt')} (${limit}): ${last?.error ?? 'no answer'}`;
      ctx.log.warn({ dispatchId, task: task.id, attempts: attempts.length }, 'dispatch exhausted: task FAILED');
      tx.dispatch.move(dispatchId, 'failed', { nextAttemptAt: null });
      tx.tasks.transition(task, 'FAILED', { at: now, cause: why, failedBy: 'dispatch', deadlineAt: null });
      return null;
    }
    const attempt = tx.attempts.start({ dispatchId, taskId: task.id, turn: turn.turn, at: now });
    tx.dispatch.move(dispatchId, 'pending', { nextAttemptAt: now + agent.webhook.timeoutMs + LEASE_MARGIN_MS });
    return { attempt, agent, envelope: turn.envelope };
  });
  if (!claim) return null;

  const { attempt, agent, envelope } = claim;
  const headers = webhookHeaders(agent.webhook, dispatchId, envelope, new Date(ctx.now()));
  ctx.log.info({ dispatchId, task: attempt.taskId, turn: attempt.turn, attempt: attempt.attempt }, 'webhook attempt');
  const result = await postWebhook(agent.webhook.url, headers, envelope, agent.webhook.timeoutMs, ctx.dispatcher, ctx.now);
  if (result.outcome === 'accepted') failpoint('after-webhook-2xx');
  ctx.metrics?.attempts.inc({ outcome: result.outcome, kind: 'dispatch' });
  const fields = { dispatchId, task: attempt.taskId, attempt: attempt.attempt, outcome: result.outcome, status: result.httpStatus, error: result.error };
  if (result.outcome === 'accepted') ctx.log.info(fields, 'webhook result');
  else ctx.log.warn(fields, 'webhook result: not accepted');

  store.tx((tx) => {
    const at = ctx.now();
    tx.attempts.finish(attempt.id, { at, outcome: result.outcome, httpStatus: result.httpStatus, error: result.error });
    const turn = tx.turns.byDispatchId(dispatchId);
    const task = tx.tasks.get(attempt.taskId);
    if (!turn || !task || turn.dispatchState !== 'pending') return;
    const current = task.state === 'SUBMITTED' && task.turn === turn.turn;
    switch (result.outcome) {
      case 'accepted':
        tx.dispatch.move(dispatchId, 'accepted', { nextAttemptAt: null, acceptedAt: at });
        if (current) {
          tx.tasks.transition(task, 'WORKING', {
            at,
            cause: `webhook accepted (HTTP ${result.httpStatus}) on attempt ${attempt.attempt}`,
          });
        }
        return;
      case 'retry': {
        const exhausted = attempt.attempt >= agent.webhook.maxAttempts || at - turn.createdAt > agent.webhook.maxAgeMs;
        if (!exhausted) {
          const delay = backoffMs(attempt.attempt, result.retryAfterMs, ctx.random);
          tx.dispatch.move(dispatchId, 'pending', { nextAttemptAt: at + delay });
          return;
        }
        tx.dispatch.move(dispatchId, 'failed', { nextAttemptAt: null });
        if (current) {
          const limit = attempt.attempt >= agent.webhook.maxAttempts ? `max_attempts ${agent.webhook.maxAttempts}` : `max_age_s ${agent.webhook.maxAgeMs / 1000}`;
          tx.tasks.transition(task, 'FAILED', {
            at,
            cause: `dispatch exhausted after ${plural(attempt.attempt, 'attempt')} (${limit}): ${result.error}`,
            failedBy: 'dispatch',
            deadlineAt: null,
          });
        }
        return;
      }
      case 'failed':
      case 'gone':
        tx.dispatch.move(dispatchId, 'failed', { nextAttemptAt: null });
        if (current) {
          const why =
            result.outcome === 'gone'
              ? `the webhook answered HTTP 410 Gone; dispatch stopped`
              : `the webhook refused the job (${result.error}); check agents.webhook.url and its auth`;
          tx.tasks.transition(task, 'FAILED', { at, cause: why, failedBy: 'dispatch', deadlineAt: null });
        }
        return;
    }
  });
  return result;
}
