import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaskChanged } from '../../../src/core/events.js';
import { hermesBody, hex, startHarness, type Harness } from '../../helpers/bridge-harness.js';
import { startDovecot, type DovecotHandle } from '../../helpers/dovecot.js';

/** With `mailbox.watch = true`, replies are applied as they land (IMAP IDLE), with no call. */
let dovecot: DovecotHandle;
let h: Harness;

beforeAll(async () => {
  dovecot = await startDovecot();
  // A long check interval: only the watcher (IDLE) can explain a promotion without a call.
  h = await startHarness({
    dovecot,
    mailboxToml: 'watch = true\nwatch_tick_s = 1',
    respond: (req, n) => (req.envelope?.ask === 'flaky' && n <= 2 ? { status: 503, headers: { 'retry-after': '1' } } : { status: 202 }),
  });
  h.app.bridge.ctx.config.mailbox.checkIntervalMs = 3600_000;
});
afterAll(async () => {
  await h?.close();
  await dovecot?.stop();
});

/** The bridge's next event moving the task to `state` (subscribe before causing it). */
function nextState(taskId: string, state: string): Promise<TaskChanged> {
  return h.app.bridge.events.next((e) => e.task.id === taskId && e.task.state === state);
}

describe('the watcher', () => {
  it('applies a reply APPENDed to Dovecot without any A2A call', async () => {
    const task = (await h.rpc(hermesBody('watched job', `ctx-${hex(8)}`))).json.result!.task!;
    expect(task.status.state).toBe('TASK_STATE_WORKING');
    const env = h.receiver.requests.map((r) => r.envelope!).find((e) => e.task_id === task.id)!;
    const completed = nextState(task.id, 'COMPLETED');
    await dovecot.append(await h.reply(env));
    expect((await completed).cause).toMatch(/^completed by reply /);
    expect(h.app.bridge.ctx.store.tasks.get(task.id)!.state).toBe('COMPLETED');
  });

  it('retries a refused webhook on its timer, with no call, honouring retry-after', async () => {
    const ctx = `ctx-${hex(8)}`;
    // The task is created inside the call: wait for any task of this context to reach WORKING.
    const working = h.app.bridge.events.next((e) => e.task.contextId === ctx && e.task.state === 'WORKING');
    const task = (await h.rpc(hermesBody('flaky', ctx))).json.result!.task!;
    expect(task.status.state).toBe('TASK_STATE_SUBMITTED');
    expect((await working).task.id).toBe(task.id);
    const ids = h.receiver.requests.filter((r) => r.envelope?.task_id === task.id).map((r) => r.id);
    expect(ids.length).toBeGreaterThanOrEqual(2);
    expect(new Set(ids).size).toBe(1);
  });
});
