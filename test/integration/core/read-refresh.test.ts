/**
 * The request-driven refresh on the read path (src/core/refresh-due.ts, Bridge.get): a GetTask
 * while nothing can be due asks the store nothing, and one at the moment something falls due — a
 * webhook retry, the mailbox check, a deadline — runs it, on the injected clock.
 */
import { describe, expect, it, vi } from 'vitest';
import { hermesBody, hex, useHarnesses } from '../../helpers/bridge-harness.js';

const suite = useHarnesses();

describe('GetTask runs the refresh exactly when something is due', () => {
  it('quiet calls read nothing; the retry, the check and the deadline each run on the first call at their time', async () => {
    const h = await suite.start({ respond: () => ({ status: 202 }), mailboxToml: 'check_interval_s = 60', frozenClock: true });
    await h.receiver.close(); // every attempt: ECONNREFUSED, retried with backoff
    const body = hermesBody('Summarise the report', `ctx-${hex(8)}`);
    const task = (await h.rpc({ ...body, params: { ...body.params, configuration: { returnImmediately: true } } })).json.result!.task!;
    await h.app.bridge.idle();
    const { store } = h.app.bridge.ctx;
    const folder = h.config.mailbox.folder!;
    const get = async (): Promise<string> => {
      const r = await h.rpc({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: task.id } });
      await h.app.bridge.idle();
      return r.json.result!.status.state;
    };
    await get(); // the first read after those commits refreshes once

    const next = vi.spyOn(store.schedule, 'next');
    const due = vi.spyOn(store.turns, 'dueDispatches');
    try {
      for (let i = 0; i < 5; i++) await get();
      expect(next).not.toHaveBeenCalled();
      expect(due).not.toHaveBeenCalled();
    } finally {
      next.mockRestore();
      due.mockRestore();
    }

    // The retry: not a ms early, and at its time.
    const retryAt = store.turns.get(task.id, 1)!.nextAttemptAt!;
    const checkAt = store.mailbox.state(folder).lastCheckAt! + 60_000;
    expect(retryAt).toBeLessThan(checkAt);
    h.advance(retryAt - 1 - h.app.bridge.ctx.now());
    await get();
    expect(store.attempts.ofTask(task.id)).toHaveLength(1);
    h.advance(1);
    await get();
    expect(store.attempts.ofTask(task.id)).toHaveLength(2);

    // The mailbox check, once its interval has passed.
    const lastCheck = store.mailbox.state(folder).lastCheckAt!;
    h.advance(lastCheck + 60_000 - 1 - h.app.bridge.ctx.now());
    await get();
    expect(store.mailbox.state(folder).lastCheckAt).toBe(lastCheck);
    h.advance(1);
    await get();
    expect(store.mailbox.state(folder).lastCheckAt).toBe(h.app.bridge.ctx.now());

    // The deadline sweep: the call after it passed answers FAILED.
    const deadline = store.tasks.get(task.id)!.deadlineAt!;
    h.advance(deadline + 1 - h.app.bridge.ctx.now());
    expect(await get()).toBe('TASK_STATE_FAILED');
  });
});

describe('a clock stepped back', () => {
  it('does not stop the mailbox checks: the call after the step checks, and a reply that came is read', async () => {
    const h = await suite.start({ respond: () => ({ status: 202 }), mailboxToml: 'check_interval_s = 60', frozenClock: true });
    const task = (await h.rpc(hermesBody('Summarise the report', `ctx-${hex(8)}`))).json.result!.task!;
    await h.app.bridge.idle();
    const get = async (): Promise<string> => {
      const r = await h.rpc({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: task.id } });
      await h.app.bridge.idle();
      return r.json.result!.status.state;
    };
    expect(await get()).toBe('TASK_STATE_WORKING');
    const { store } = h.app.bridge.ctx;
    const folder = h.config.mailbox.folder!;
    const before = store.mailbox.state(folder).lastCheckAt!;

    // Ten minutes back (NTP corrects a fast clock; within date_skew_s, so the reply's Date passes gate 8).
    h.advance(-600_000);
    await suite.dovecot.append(await h.reply(h.envelope(1), { date: new Date(h.app.bridge.ctx.now()) }));
    expect(await get()).toBe('TASK_STATE_COMPLETED');
    expect(store.mailbox.state(folder).lastCheckAt).toBe(before - 600_000);
  });
});
