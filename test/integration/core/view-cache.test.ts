/**
 * GetTask and ListTasks answer from the view cache (src/core/view-cache.ts) only while nothing the
 * view was read from changed: a commit by another connection to the store (as the CLI makes) and
 * a commit of the bridge's own (a new task) are seen by the very next call. With
 * `check_interval_s = 3600` no mailbox check commits between the calls, so the cache is in use.
 */
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { hermesBody, hex, useHarness } from '../../helpers/bridge-harness.js';
import { Store } from '../../../src/store/store.js';
import { VIEW_CACHE_MAX_WEIGHT } from '../../../src/core/view-cache.js';
import type { V1Task } from '../../../src/a2a/wire.js';
import type { V03Task } from '../../../src/a2a/wire-v03.js';

const suite = useHarness({ mailboxToml: 'check_interval_s = 3600' });

async function send(ctx: string): Promise<V1Task> {
  const r = await suite.h.rpc(hermesBody('Summarise the report', ctx));
  return (r.json.result as { task: V1Task }).task;
}

const statusOf = async (id: string): Promise<string> => {
  const r = await suite.h.rpc({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id } });
  return (r.json.result as V1Task).status.message!.parts[0]!.text!;
};

const totalOf = async (): Promise<number> =>
  ((await suite.h.rpc({ jsonrpc: '2.0', id: 2, method: 'ListTasks', params: {} })).json.result as { totalSize: number }).totalSize;

describe('view cache', () => {
  it("sees another connection's commit and the bridge's own on the next call", async () => {
    const task = await send(`ctx-${hex(8)}`);
    expect(task.status.state).toBe('TASK_STATE_WORKING');
    expect(await statusOf(task.id)).toMatch(/Mailbox last checked \S+ \(\d+ s ago: /);
    expect(await totalOf()).toBe(1);
    expect(await totalOf()).toBe(1);

    // Another connection (the CLI's, another process's) records a failed check.
    const other = Store.open(suite.h.config.store.path);
    try {
      other.tx((tx) => tx.mailbox.recordCheck(suite.h.config.mailbox.folder!, { at: Date.now(), ok: false, result: 'error', error: 'connection refused' }));
    } finally {
      other.close();
    }
    expect(await statusOf(task.id)).toMatch(/The mailbox is unreachable since \S+: connection refused/);

    // The bridge's own commit: a second task counts in the next page.
    await send(`ctx-${hex(8)}`);
    expect(await totalOf()).toBe(2);
  });
});

describe("GetTask's serialised answer", () => {
  it("is one text per view and dialect, each call with its own id, replaced after another connection's commit", async () => {
    const task = await send(`ctx-${hex(8)}`);
    const v1 = async (id: string | number) => (await suite.h.rpc({ jsonrpc: '2.0', id, method: 'GetTask', params: { id: task.id } })).json;
    const v03 = async (id: string | number) => (await suite.h.rpc({ jsonrpc: '2.0', id, method: 'tasks/get', params: { id: task.id } })).json;
    const [a, b, c] = [await v1(1), await v1('two'), await v03(3)];
    expect([a.id, b.id, c.id]).toEqual([1, 'two', 3]);
    expect(b.result).toEqual(a.result);
    expect(a.result!.status.state).toBe('TASK_STATE_WORKING');
    const old = (c.result as V03Task).status;
    expect(old.state).toBe('working');

    const other = Store.open(suite.h.config.store.path);
    try {
      other.tx((tx) => tx.mailbox.recordCheck(suite.h.config.mailbox.folder!, { at: Date.now(), ok: false, result: 'error', error: 'connection refused' }));
    } finally {
      other.close();
    }
    const [after1, after03] = [await v1(4), await v03(5)];
    expect(after1.id).toBe(4);
    expect(after1.result!.status.message!.parts[0]!.text).toMatch(/The mailbox is unreachable since \S+: connection refused/);
    expect(after03.id).toBe(5);
    expect(JSON.stringify((after03.result as V03Task).status.message)).toMatch(/The mailbox is unreachable since \S+: connection refused/);
  });
});

describe('GetTask while nothing is due (answered without waiting for a refresh)', () => {
  it('an unknown id is TaskNotFound and bad params are -32602, in both dialects, as when a refresh runs', async () => {
    const task = await send(`ctx-${hex(8)}`);
    await suite.h.app.bridge.idle();
    await statusOf(task.id); // the refresh after the send's commits; from here on nothing is due
    const next = vi.spyOn(suite.h.app.bridge.ctx.store.schedule, 'next');
    onTestFinished(() => next.mockRestore());
    const v1 = await suite.h.rpc({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'no-such-task' } });
    expect(v1.json.error).toMatchObject({ code: -32001 });
    expect(v1.json.error!.data).toEqual([expect.objectContaining({ reason: 'TASK_NOT_FOUND' })]);
    const v03 = await suite.h.rpc({ jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { id: 'no-such-task' } });
    expect(v03.json.error).toMatchObject({ code: -32001 });
    expect(v03.json.error!.data).toBeUndefined();
    const bad = await suite.h.rpc({ jsonrpc: '2.0', id: 3, method: 'GetTask', params: { id: 'x', historyLength: -1 } });
    expect(bad.json.error).toMatchObject({ code: -32602 });
    expect(bad.json.id).toBe(3);
    expect(next).not.toHaveBeenCalled(); // no refresh ran: the answers came from the quiet path
  });
});

describe('the view cache under reads of one large task with many history lengths', () => {
  it('keeps at most VIEW_CACHE_MAX_WEIGHT, every answer whole', async () => {
    // A 900 KB ask: each historyLength is its own view, each holding the ask.
    const ask = 'x'.repeat(900_000);
    const task = (await suite.h.rpc(hermesBody(ask, `ctx-${hex(8)}`))).json.result!.task!;
    await suite.h.app.bridge.idle();
    await statusOf(task.id);
    const { views } = suite.h.app.bridge;
    for (let n = 1; n <= 40; n++) {
      const r = await suite.h.rpc({ jsonrpc: '2.0', id: n, method: 'GetTask', params: { id: task.id, historyLength: n } });
      expect(r.json.id).toBe(n);
      expect(r.json.result!.history[0]!.parts[0]!.text).toBe(ask);
      // Each view holds the ask: no more of them than fit in the bound.
      expect(views.size).toBeLessThanOrEqual(Math.floor(VIEW_CACHE_MAX_WEIGHT / ask.length));
    }
    expect(views.size).toBeGreaterThan(0);
    expect(views.weight).toBeLessThanOrEqual(VIEW_CACHE_MAX_WEIGHT);
  });
});
