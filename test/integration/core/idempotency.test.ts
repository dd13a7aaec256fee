import { describe, expect, it } from 'vitest';
import { hermesBody, hex, useHarness } from '../../helpers/bridge-harness.js';

/**
 * Replaying one SendMessage 100 times (same messageId) and polling 100 times on an open context
 * yields exactly one dispatch (A2A #928, Hermes PR #86322, a2a-js PR #632).
 */

const suite = useHarness({});

describe('one dispatch per job', () => {
  it('100 concurrent replays of one SendMessage and 100 concurrent polls dispatch exactly once', async () => {
    const ctx = `ctx-${hex(8)}`;
    const body = hermesBody('Do the thing once', ctx);
    const replays = await Promise.all(Array.from({ length: 100 }, () => suite.h.rpc(body)));
    const ids = new Set(replays.map((r) => r.json.result?.task?.id));
    expect(ids.size).toBe(1);
    expect([...ids][0]).toMatch(/^[0-9a-f-]{36}$/);
    const polls = await Promise.all(Array.from({ length: 100 }, (_, i) => suite.h.rpc(hermesBody(i % 2 ? 'status' : 'any news?', ctx))));
    for (const p of polls) expect(p.json.result!.task!.id).toBe([...ids][0]);
    expect(suite.h.receiver.requests).toHaveLength(1);
    expect(suite.h.receiver.distinctIds()).toHaveLength(1);
  });

  it('a messageId reused with other content is invalid params and dispatches nothing', async () => {
    const ctx = `ctx-${hex(8)}`;
    const body = hermesBody('Original job', ctx);
    const before = suite.h.receiver.requests.length;
    expect((await suite.h.rpc(body)).json.result!.task!.status.state).toBe('TASK_STATE_WORKING');
    const changed = structuredClone(body);
    changed.params.message.parts[0]!.text = 'Another job';
    const r = await suite.h.rpc(changed);
    expect(r.status).toBe(200);
    expect(r.json.error).toMatchObject({ code: -32602, message: expect.stringContaining('already used for a different message') as unknown });
    expect(suite.h.receiver.requests.length).toBe(before + 1);
  });

  it('dedupe is durable: after a restart the same messageId returns the same task and sends nothing', async () => {
    const ctx = `ctx-${hex(8)}`;
    const body = hermesBody('Survive a restart', ctx);
    const first = (await suite.h.rpc(body)).json.result!.task;
    const sent = suite.h.receiver.requests.length;
    await suite.h.restart();
    const again = (await suite.h.rpc(body)).json.result!.task;
    expect(again!.id).toBe(first!.id);
    expect(again!.contextId).toBe(ctx);
    const poll = (await suite.h.rpc(hermesBody('status', ctx))).json.result!.task;
    expect(poll!.id).toBe(first!.id);
    expect(suite.h.receiver.requests.length).toBe(sent);
  });
});
