/**
 * A push body is one snapshot of one committed state of the task (attack review 6, F6): the body
 * is rendered a turn after its delivery was claimed (src/core/push-bodies.ts), and a reply applied
 * in between must not pair the claimed row's state with the artifacts of the reply. The body is
 * the task as committed at render time (src/core/push.ts `snapshot`, docs/push.md), and a retry
 * while the task has not changed sends that same body. Real PushWorker, store and production
 * renderer; a loopback receiver; the injected clock.
 */
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { renderPush } from '../../../src/a2a/push-wire.js';
import type { AgentConfig } from '../../../src/config/config.js';
import type { BridgeContext } from '../../../src/core/context.js';
import { PushWorker, storePushConfig } from '../../../src/core/push.js';
import { viewTask } from '../../../src/core/task-view.js';
import { AGENT, NOW, send, submitContext } from '../../helpers/submit-context.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver.js';

const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closing.splice(0).reverse()) await c();
});

const agent: AgentConfig = { ...AGENT, untrustedLabel: '[UNTRUSTED — grok reply, verify before acting]', dkimDomain: 'agent.example' };

/** The submit context with what the push worker and the task view read: the agent, the push rules, a log, the mailbox's folder, a clock the test moves. */
function pushContext(clock: { now: number }): BridgeContext {
  const base = submitContext();
  const config = base.config as unknown as { agents: AgentConfig[]; file: string; server: Record<string, unknown>; mailbox: Record<string, unknown> };
  config.agents = [agent];
  config.file = '/home/u/.config/a2a-mailbridge/config.toml';
  Object.assign(config.server, { pushAllowHosts: [] });
  Object.assign(config.mailbox, { checkIntervalMs: 60_000, watch: false });
  return { ...base, now: () => clock.now, log: pino({ level: 'silent' }), random: () => 0.5, mailbox: { folder: 'INBOX' } } as unknown as BridgeContext;
}

/** The agent's `done` reply, applied as a verdict writes one (src/core/apply-reply.ts): its reply row, the turn, the task COMPLETED. */
function applyDone(ctx: BridgeContext, taskId: string, answer: string, at: number): number {
  return ctx.store.tx((tx) => {
    const task = tx.tasks.get(taskId)!;
    const ledgerId = tx.ledger.record({
      source: 'src-done', seenAt: at, messageId: null, fromHeader: null, subject: null, dateHeader: null, size: 0, rawSha256: 'raw-done', raw: null,
      agent: 'grok', taskId, verdict: 'applied:done', reason: 'test',
    })!;
    tx.replies.insert({ ledgerId, taskId, turn: task.turn, agent: 'grok', kind: 'done', nonce: '0123456789abcdef', text: answer, omittedLines: 0, createdAt: at });
    tx.turns.recordReply(taskId, task.turn, { status: 'done', text: answer, ledgerId, at, revokeToken: true });
    tx.tasks.transition(task, 'COMPLETED', { at, cause: `completed by reply (ledger #${ledgerId})`, deadlineAt: null });
    return ledgerId;
  });
}

describe('push body: one committed state', () => {
  let receiver: WebhookReceiver;

  it('a reply applied between the claim and the render: the body is the state that reply committed, with its artifact and status together; the retry sends the same body', async () => {
    // The first POST is answered 503: the delivery is retried.
    receiver = await startWebhookReceiver({ bearer: 'push-snapshot', path: '/push', respond: (r, n) => ({ status: !r.verified ? 401 : n === 1 ? 503 : 200 }) });
    closing.push(() => receiver.close());
    const clock = { now: NOW };
    const ctx = pushContext(clock);
    const outcome = send(ctx, 'Summarise the three reports');
    if (outcome.kind !== 'new') throw new Error(`no new task: ${outcome.kind}`);
    const taskId = outcome.task.id;
    ctx.store.tx((tx) => {
      storePushConfig(tx, taskId, { id: 'cfg', url: receiver.url, authScheme: 'Bearer', authCredentials: 'push-snapshot', dialect: '1.0' }, NOW);
      tx.tasks.transition(tx.tasks.get(taskId)!, 'WORKING', { at: NOW + 1_000, cause: 'the agent took the job' });
    });
    const worker = new PushWorker(ctx, () => () => undefined);
    closing.push(() => worker.close());

    clock.now = NOW + 2_000;
    worker.start(renderPush); // claims the WORKING delivery now; its body is rendered next turn
    const ledgerId = applyDone(ctx, taskId, 'The three reports agree.', NOW + 2_000);
    await worker.idle();

    // The snapshot a GetTask reads now: COMPLETED, its status and the reply's artifact.
    const now = JSON.parse(JSON.stringify(renderPush(viewTask(ctx, agent, ctx.store.tasks.get(taskId)!, 0), '1.0'))) as { task: { status: { state: string }; artifacts: { artifactId: string }[] } };
    expect(now.task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(now.task.artifacts.map((a) => a.artifactId)).toEqual([`reply-${ledgerId}`]);
    const [first] = await receiver.waitForRequests(1);
    expect(JSON.parse(first!.body.toString('utf8'))).toEqual(now);

    // The retry of that delivery, while the task has not changed: the same body, byte for byte.
    clock.now = NOW + 60_000;
    worker.kick();
    await worker.idle();
    const sent = await receiver.waitForRequests(3);
    expect(sent[1]!.body.equals(first!.body)).toBe(true);
    // Then the COMPLETED change's own delivery: the same committed state.
    expect(JSON.parse(sent[2]!.body.toString('utf8'))).toEqual(now);
    expect(sent.map((r) => r.verified)).toEqual([true, true, true]);
  });
});
