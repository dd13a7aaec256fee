import { describe, expect, it } from 'vitest';
import { hermesBody, useHarnesses } from '../../helpers/bridge-harness.js';
import { newContext, statusMessage } from './caller-view.js';
import type { V1Task } from '../../../src/a2a/wire.js';
import { iso } from '../../../src/core/time.js';
import { startWebhookReceiver } from '../../helpers/webhook-receiver.js';

/**
 * The time a SUBMITTED task's status text gives for the next webhook attempt is the time the
 * next attempt really runs, on the injected clock: never the lease of an attempt still in
 * flight (timeout + 30 s), which a caller of `returnImmediately` used to be told.
 */
const suite = useHarnesses();

const sentence = (t: V1Task | undefined): string | undefined => /Next attempt at (\S+Z)\./.exec(statusMessage(t))?.[1];

describe('the next attempt time in the status text', () => {
  it('returnImmediately while attempt 1 is in flight: no "Next attempt at" (the lease is no schedule); after it failed, the time stated is when attempt 2 runs', async () => {
    const h = await suite.start({ respond: () => ({ status: 202 }), mailboxToml: 'check_interval_s = 3600', frozenClock: true });
    await h.receiver.close(); // every attempt: ECONNREFUSED, retried with backoff
    const ctx = newContext();
    const body = hermesBody('Summarise the report', ctx);
    const first = await h.rpc({ ...body, params: { ...body.params, configuration: { returnImmediately: true } } });
    const task = first.json.result!.task!;
    expect(task.status.state).toBe('TASK_STATE_SUBMITTED');
    // The answer is built once attempt 1 is claimed (its row and lease committed), before its POST ends.
    expect(statusMessage(task)).toMatch(/^The webhook to grok is being delivered \(attempt 1, started \S+Z; it times out at \S+Z\)\. Deadline/);
    expect(sentence(task)).toBeUndefined();
    await h.app.bridge.idle();
    const store = h.app.bridge.ctx.store;
    const [a1] = store.attempts.ofTask(task.id);
    expect(a1).toMatchObject({ attempt: 1, outcome: 'retry' });

    const poll = (await h.rpc(hermesBody('status', ctx))).json.result!.task!;
    const scheduled = store.turns.get(task.id, 1)!.nextAttemptAt!;
    expect(scheduled).toBeGreaterThan(a1!.finishedAt!);
    expect(sentence(poll)).toBe(iso(scheduled));
    // One ms before the schedule a poll sends nothing; at it, attempt 2 runs, at the stated time.
    const due = async (): Promise<void> => {
      await h.rpc(hermesBody('status', ctx));
      await h.app.bridge.idle();
    };
    h.advance(scheduled - 1 - h.app.bridge.ctx.now());
    await due();
    expect(store.attempts.ofTask(task.id)).toHaveLength(1);
    h.advance(scheduled - h.app.bridge.ctx.now());
    await due();
    const rows = store.attempts.ofTask(task.id);
    expect(rows).toHaveLength(2);
    expect(iso(rows[1]!.startedAt)).toBe(sentence(poll));
  });
});

/**
 * A bridge on the frozen clock whose webhook refuses connections, and a task sent with
 * `returnImmediately` whose attempt 1 has ended (ECONNREFUSED: retried with backoff).
 * @returns the harness, the task's context, the task, attempt 1 and its backoff (ms)
 */
async function firstAttemptFailed() {
  const h = await suite.start({ respond: () => ({ status: 202 }), mailboxToml: 'check_interval_s = 3600', frozenClock: true });
  await h.receiver.close();
  const ctx = newContext();
  const body = hermesBody('Summarise the report', ctx);
  const task = (await h.rpc({ ...body, params: { ...body.params, configuration: { returnImmediately: true } } })).json.result!.task!;
  await h.app.bridge.idle();
  const [a1] = h.app.bridge.ctx.store.attempts.ofTask(task.id);
  const backoff = h.app.bridge.ctx.store.turns.get(task.id, 1)!.nextAttemptAt! - a1!.finishedAt!;
  return { h, ctx, task, a1, backoff };
}

describe('a clock stepped back', () => {
  it('a webhook retry keeps its delay: stepped back 1 h after attempt 1 failed, attempt 2 runs once the backoff has elapsed, not 1 h later', async () => {
    const { h, ctx, task, a1, backoff } = await firstAttemptFailed();
    const store = h.app.bridge.ctx.store;
    expect(a1).toMatchObject({ attempt: 1, outcome: 'retry' });
    expect(backoff).toBeGreaterThan(0);
    expect(backoff).toBeLessThanOrEqual(2000);
    const due = async (): Promise<number> => {
      await h.rpc(hermesBody('status', ctx));
      await h.app.bridge.idle();
      return store.attempts.ofTask(task.id).length;
    };
    // NTP steps the clock back an hour; then the backoff elapses.
    h.advance(-3600_000);
    expect(await due()).toBe(1);
    h.advance(backoff);
    expect(await due()).toBe(2);
    // The attempt after it is scheduled from the clock as it now is.
    const [, a2] = store.attempts.ofTask(task.id);
    expect(a2!.startedAt).toBe(a1!.finishedAt! - 3600_000 + backoff);
  });

  it('stepped back 1 h while the bridge was stopped: after the restart, attempt 2 still runs once the backoff has elapsed', async () => {
    const { h, ctx, task, backoff } = await firstAttemptFailed();
    h.advance(-3600_000);
    await h.restart(); // its start-up refresh runs on the stepped clock
    const attempts = async (): Promise<number> => {
      await h.rpc(hermesBody('status', ctx));
      await h.app.bridge.idle();
      return h.app.bridge.ctx.store.attempts.ofTask(task.id).length;
    };
    expect(await attempts()).toBe(1);
    h.advance(backoff);
    expect(await attempts()).toBe(2);
  });
});

describe('a clock stepped back, push', () => {
  it('a push retry keeps its delay: stepped back 1 h after POST 1 was refused, POST 2 runs once the backoff has elapsed', async () => {
    const h = await suite.start({ respond: () => ({ status: 202 }), mailboxToml: 'check_interval_s = 3600', frozenClock: true });
    const ctx = newContext();
    const body = hermesBody('Push me the result', ctx);
    const config = { taskId: '', id: 'cfg-step', url: 'http://127.0.0.1:9/hook' }; // nothing listens: every POST is refused, retried
    const task = (await h.rpc({ ...body, params: { ...body.params, configuration: { taskPushNotificationConfig: config } } })).json.result!.task!;
    const store = h.app.bridge.ctx.store;
    const settle = async (): Promise<void> => {
      await h.app.bridge.idle();
      await h.app.bridge.push.idle();
    };
    // The WORKING change is stamped 1 ms after SUBMITTED (status times strictly increase); on the frozen clock, reach it.
    h.advance(1);
    await h.rpc({ jsonrpc: '2.0', id: 0, method: 'GetTask', params: { id: task.id } });
    await settle();
    const [d1] = store.push.deliveriesOf(task.id);
    expect(d1).toMatchObject({ state: 'pending', attempts: 1 });
    const backoff = d1!.nextAttemptAt! - h.app.bridge.ctx.now();
    expect(backoff).toBeGreaterThan(0);
    expect(backoff).toBeLessThanOrEqual(2000);
    h.advance(-3600_000);
    await h.rpc({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: task.id } });
    await settle();
    expect(store.push.deliveriesOf(task.id)[0]!.attempts).toBe(1);
    h.advance(backoff);
    await h.rpc({ jsonrpc: '2.0', id: 2, method: 'GetTask', params: { id: task.id } });
    await settle();
    expect(store.push.deliveriesOf(task.id)[0]!.attempts).toBe(2);
  });

  it('a task change after a step back of 1 h is POSTed at once (its status time stays after the last one, its delivery is due now)', async () => {
    const push = await startWebhookReceiver({ bearer: 'push-step-credential' });
    try {
      const h = await suite.start({ respond: () => ({ status: 202 }), mailboxToml: 'check_interval_s = 3600', frozenClock: true });
      const ctx = newContext();
      const body = hermesBody('Push me the result', ctx);
      const config = { taskId: '', id: 'cfg-step2', url: push.url, authentication: { scheme: 'Bearer', credentials: 'push-step-credential' } };
      const task = (await h.rpc({ ...body, params: { ...body.params, configuration: { taskPushNotificationConfig: config } } })).json.result!.task!;
      expect(task.status.state).toBe('TASK_STATE_WORKING');
      h.advance(1);
      await h.rpc({ jsonrpc: '2.0', id: 0, method: 'GetTask', params: { id: task.id } });
      await push.waitForRequests(1);
      h.advance(-3600_000);
      const canceled = await h.rpc({ jsonrpc: '2.0', id: 1, method: 'CancelTask', params: { id: task.id } });
      expect(canceled.json.result!.status.state).toBe('TASK_STATE_CANCELED');
      await h.app.bridge.idle();
      await h.app.bridge.push.idle();
      const [, d2] = h.app.bridge.ctx.store.push.deliveriesOf(task.id);
      expect(d2).toMatchObject({ taskState: 'CANCELED', state: 'delivered', attempts: 1 });
      const bodies = push.requests.map((r) => (JSON.parse(r.body.toString('utf8')) as { task: { status: { state: string } } }).task.status.state);
      expect(bodies).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_CANCELED']);
    } finally {
      await push.close();
    }
  });
});
