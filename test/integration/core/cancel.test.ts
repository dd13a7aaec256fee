import { describe, expect, it } from 'vitest';
import { hermesBody, hex, useHarness } from '../../helpers/bridge-harness.js';

/** CancelTask revokes the token, records the cause and notifies the agent when configured; a canceled task is not cancelable again. */

const suite = useHarness({ webhookToml: 'notify_cancel = true' });

const call = async <M extends string>(method: M, params: unknown) => (await suite.h.rpc({ jsonrpc: '2.0', id: hex(4), method, params })).json;

describe('CancelTask', () => {
  it('cancels, notifies the agent once, refuses a second cancel (-32002), and a later reply is recorded but never applied', async () => {
    const ctx = `ctx-${hex(8)}`;
    const task = (await suite.h.rpc(hermesBody('Long job', ctx))).json.result!.task;
    const envelope = suite.h.envelope(suite.h.receiver.requests.length);
    const canceled = (await call('CancelTask', { id: task!.id })).result;
    expect(canceled!.status.state).toBe('TASK_STATE_CANCELED');
    expect(canceled!.status.message!.parts[0]!.text).toBe('Canceled: canceled by the caller.');

    // The notice goes out in the background: the same envelope with cancel: true, its own webhook-id.
    const notices = await suite.h.receiver.waitForRequests(suite.h.receiver.requests.length === 1 ? 2 : suite.h.receiver.requests.length);
    const notice = notices.at(-1)!;
    expect(notice.verified).toBe(true);
    expect(notice.envelope).toMatchObject({ task_id: task!.id, turn: 1, cancel: true });
    expect(notice.id).not.toBe(suite.h.receiver.requests[0]!.id);

    const again = await call('CancelTask', { id: task!.id });
    expect(again.error).toMatchObject({ code: -32002, message: `Task ${task!.id} is already canceled; there is nothing more to cancel`, data: [{ reason: 'TASK_NOT_CANCELABLE' }] });
    await suite.h.app.bridge.idle();
    expect(suite.h.receiver.requests.filter((r) => r.envelope?.cancel)).toHaveLength(1);
    expect(suite.h.app.bridge.ctx.store.attempts.ofTask(task!.id).map((a) => [a.dispatchId.startsWith('cancel_'), a.outcome])).toEqual([
      [false, 'accepted'],
      [true, 'accepted'],
    ]);

    await suite.dovecot.append(await suite.h.reply(envelope, { answer: 'too late' }));
    const after = (await suite.h.rpc(hermesBody('status', ctx))).json.result!.task;
    expect(after!.status.state).toBe('TASK_STATE_CANCELED');
    expect(after!.artifacts).toEqual([]);
    expect(suite.h.app.bridge.ctx.store.ledger.query({ taskId: task!.id, limit: 5 }).map((l) => l.verdict)).toEqual(['bad-token']);
    expect(suite.h.app.bridge.ctx.store.audit.latest(task!.id)).toMatchObject({ state: 'CANCELED', cause: 'canceled by the caller' });
    expect(suite.h.app.bridge.ctx.store.audit.of(task!.id)).toHaveLength(1);
  });

  it('a completed task is not cancelable (-32002) and an unknown one is not found (-32001)', async () => {
    const ctx = `ctx-${hex(8)}`;
    const task = (await suite.h.rpc(hermesBody('Quick job', ctx))).json.result!.task;
    const env = suite.h.receiver.requests.map((r) => r.envelope!).find((e) => e.task_id === task!.id)!;
    await suite.dovecot.append(await suite.h.reply(env));
    expect((await suite.h.rpc(hermesBody('status', ctx))).json.result!.task!.status.state).toBe('TASK_STATE_COMPLETED');
    expect((await call('CancelTask', { id: task!.id })).error).toMatchObject({
      code: -32002,
      message: `Task ${task!.id} cannot be canceled: it is already completed`,
      data: [{ reason: 'TASK_NOT_CANCELABLE' }],
    });
    expect((await call('CancelTask', { id: '00000000-0000-4000-8000-000000000000' })).error).toMatchObject({ code: -32001 });
  });
});
