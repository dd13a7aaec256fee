import { describe, expect, it, vi } from 'vitest';
import { hermesBody, hex, useHarness } from '../../helpers/bridge-harness.js';

/**
 * The push worker on the request path (src/core/push.ts `refresh`): a call while the store is
 * unchanged (Store.generation) and no delivery is due asks the push tables nothing, so GetTask
 * costs the same with push as without; a change — a new configuration — makes the next call look.
 * The mailbox check is an hour apart here, so calls commit nothing of their own.
 */
const suite = useHarness({ mailboxToml: 'check_interval_s = 3600' });

describe('push on the request path', () => {
  it('20 GetTask calls on an unchanged store: no push query; after a configuration is set, the next call syncs the demand', async () => {
    const { h } = suite;
    const sent = await h.rpc(hermesBody('A job nobody pushes yet', `ctx-${hex(8)}`));
    const task = sent.json.result!.task!;
    await h.app.bridge.idle();
    const reads = h.app.bridge.ctx.store.push;
    const spies = { due: vi.spyOn(reads, 'due'), nextDueAt: vi.spyOn(reads, 'nextDueAt'), active: vi.spyOn(reads, 'active') };
    try {
      const calls = (): number => Object.values(spies).reduce((n, s) => n + s.mock.calls.length, 0);
      for (let i = 0; i < 20; i++) await h.rpc({ jsonrpc: '2.0', id: i, method: 'GetTask', params: { id: task.id } });
      expect(calls()).toBe(0);
      const set = await h.rpc({
        jsonrpc: '2.0',
        id: 50,
        method: 'CreateTaskPushNotificationConfig',
        params: { taskId: task.id, id: 'cfg-quiet', url: 'http://127.0.0.1:9/hook' },
      });
      expect(set.json.error).toBeUndefined();
      await h.rpc({ jsonrpc: '2.0', id: 51, method: 'GetTask', params: { id: task.id } });
      expect(spies.active.mock.calls.length).toBeGreaterThan(0);
    } finally {
      for (const s of Object.values(spies)) s.mockRestore();
    }
  });
});
