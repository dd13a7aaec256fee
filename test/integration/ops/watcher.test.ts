import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getTask } from '../../../src/store/tasks.js';
import { hermesBody, hex, startHarness, type Harness } from '../../helpers/bridge-harness.js';
import { startDovecot, type DovecotHandle } from '../../helpers/dovecot.js';

/** Issue 6: with `mailbox.watch = true`, replies are applied as they land (IMAP IDLE), with no call. */
let dovecot: DovecotHandle;
let h: Harness;

beforeAll(async () => {
  dovecot = await startDovecot();
  // A long check interval: only the watcher (IDLE) can explain a prompt promotion.
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

/** Resolves with the task's state once `pred` holds, polling the store (not the A2A API). */
async function waitForState(taskId: string, states: string[], timeoutMs = 15_000): Promise<string> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const s = getTask(h.app.bridge.ctx.db, taskId)!.state;
    if (states.includes(s) || Date.now() > until) return s;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('the watcher', () => {
  it('applies a reply APPENDed to Dovecot without any A2A call', async () => {
    const task = (await h.rpc(hermesBody('watched job', `ctx-${hex(8)}`))).json.result!.task;
    expect(task!.status.state).toBe('TASK_STATE_WORKING');
    const env = h.receiver.requests.map((r) => r.envelope!).find((e) => e.task_id === task!.id)!;
    await dovecot.append(await h.reply(env));
    expect(await waitForState(task!.id, ['COMPLETED'])).toBe('COMPLETED');
  });

  it('retries a refused webhook on its timer, with no call, honouring retry-after', async () => {
    const task = (await h.rpc(hermesBody('flaky', `ctx-${hex(8)}`))).json.result!.task;
    expect(task!.status.state).toBe('TASK_STATE_SUBMITTED');
    expect(await waitForState(task!.id, ['WORKING'])).toBe('WORKING');
    const ids = h.receiver.requests.filter((r) => r.envelope?.task_id === task!.id).map((r) => r.id);
    expect(ids.length).toBeGreaterThanOrEqual(2);
    expect(new Set(ids).size).toBe(1);
  });
});
