import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { V1Task } from '../../../src/a2a/wire.js';
import { VIEW_ENTRY_MAX_WEIGHT } from '../../../src/core/view-cache.js';
import { expectFenced } from '../../helpers/agent-text.js';
import { hermesBody, hex, useHarness } from '../../helpers/bridge-harness.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver.js';

/**
 * A reply is rendered once, not once per read (attack review 4, 2026-12-02): its text is fenced
 * once per reply (src/core/fence-memo.ts), a GetTask view too heavy for the view cache's entries
 * is kept in a heavy slot (src/core/view-cache.ts), and the push notifications of one change are
 * one body for every configuration of the task (src/core/push-bodies.ts), as the metric
 * `a2a_mailbridge_view_renders_total` counts. Real server, Dovecot, signed replies; no clock read.
 */

// No mailbox check falls due between the calls (a check's commit would empty the view cache).
const suite = useHarness({ mailboxToml: 'check_interval_s = 3600' });
let push: WebhookReceiver;
beforeAll(async () => {
  push = await startWebhookReceiver({ bearer: 'push-credential-render', path: '/render-push', maxBodyBytes: 64 * 1024 });
});
afterAll(async () => {
  await push.close();
});

type Family = { name: string; metrics: { value?: string; labels?: Record<string, string> }[] };

/** `a2a_mailbridge_view_renders_total` by stage, from GET /metrics (0 for a stage not counted yet). */
async function renders(): Promise<{ view: number; fence: number; push: number }> {
  const res = await fetch(`${new URL(suite.h.endpoint).origin}/metrics`);
  const families = parsePrometheusTextFormat(await res.text()) as Family[];
  const metrics = families.find((f) => f.name === 'a2a_mailbridge_view_renders_total')?.metrics ?? [];
  const of = (stage: string): number => Number(metrics.find((m) => m.labels?.stage === stage)?.value ?? 0);
  return { view: of('view'), fence: of('fence'), push: of('push') };
}

async function getTask(id: string): Promise<V1Task> {
  const r = await suite.h.rpc({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id } });
  expect(r.status).toBe(200);
  return r.json.result as unknown as V1Task;
}

describe('a large reply read again and again', () => {
  it('N GetTask calls of a task whose reply is over half the view entry cap: no new view, no new fence', async () => {
    const { h, dovecot } = suite;
    const task = (await h.rpc(hermesBody('Write a very long report', `ctx-${hex(8)}`))).json.result!.task!;
    // The view holds the text twice (history and artifact): heavier than one view cache entry may be.
    const line = 'All work and no play makes Jack a dull boy.';
    const answer = Array.from({ length: Math.ceil(VIEW_ENTRY_MAX_WEIGHT / 2 / line.length) + 1000 }, () => line).join('\n');
    const envelope = h.receiver.requests.map((r) => r.envelope!).find((e) => e.task_id === task.id)!;
    await dovecot.append(await h.reply(envelope, { answer }));
    await h.app.bridge.checkAfterChange();
    // The first read marks the outcome shown (a commit): read twice before counting.
    expectFenced((await getTask(task.id)).artifacts![0]!.parts[0]!.text, answer);
    await getTask(task.id);
    const before = await renders();
    for (let i = 0; i < 5; i++) {
      const got = await getTask(task.id);
      expect(got.status.state).toBe('TASK_STATE_COMPLETED');
      expectFenced(got.history.at(-1)!.parts[0]!.text, answer);
    }
    expect(await renders()).toEqual(before);
    expect(h.app.bridge.views.heavy).toBe(1);

    // A mailbox check that finds nothing new commits only its record, which no COMPLETED view shows:
    // the view is kept (it was serialised again after every check, every check_interval_s).
    const working = (await h.rpc(hermesBody('Another job, still out', `ctx-${hex(8)}`))).json.result!.task!;
    const workingText = async (): Promise<string> => (await getTask(working.id)).status.message!.parts[0]!.text!;
    const beforeCheck = await workingText();
    await getTask(task.id); // built again: the new task's commit emptied the cache
    const atCheck = await renders();
    h.advance(5_000);
    expect((await h.app.bridge.checkNow()).fetched).toBe(0);
    await getTask(task.id);
    expect((await renders()).view).toBe(atCheck.view);
    expect(h.app.bridge.views.heavy).toBe(1);
    // A WORKING task's view shows the check ("Mailbox last checked …"): built again.
    expect(await workingText()).not.toBe(beforeCheck);
    expect((await renders()).view).toBe(atCheck.view + 1);

    // Any other commit empties the view cache: the next view is built again, its text still not fenced again.
    h.app.bridge.views.clear();
    await getTask(task.id);
    expect((await renders()).view).toBe(atCheck.view + 2);
    expect((await renders()).fence).toBe(before.fence);
  });
});

describe('push notifications of one change', () => {
  it('six configurations of one task: the reply\'s change is one body for all six, each POST the same', async () => {
    const { h, dovecot } = suite;
    const task = (await h.rpc(hermesBody('A job six receivers follow', `ctx-${hex(8)}`))).json.result!.task!;
    for (let c = 0; c < 6; c++) {
      const r = await h.rpc({
        jsonrpc: '2.0',
        id: 10 + c,
        method: 'CreateTaskPushNotificationConfig',
        params: { taskId: task.id, id: `cfg-${c}`, url: push.url, authentication: { scheme: 'Bearer', credentials: 'push-credential-render' } },
      });
      expect(r.json.error).toBeUndefined();
    }
    await h.app.bridge.push.idle();
    const before = await renders();
    const seen = push.requests.length;
    const envelope = h.receiver.requests.map((r) => r.envelope!).find((e) => e.task_id === task.id)!;
    await dovecot.append(await h.reply(envelope, { answer: 'One answer, six receivers.' }));
    await h.app.bridge.checkAfterChange();
    const posts = (await push.waitForRequests(seen + 6, 15_000)).slice(seen);
    await h.app.bridge.push.idle();
    const bodies = posts.map((p) => p.body.toString('utf8'));
    expect(new Set(bodies).size).toBe(1);
    const sent = JSON.parse(bodies[0]!) as { task: V1Task };
    expect(sent.task.status.state).toBe('TASK_STATE_COMPLETED');
    expectFenced(sent.task.artifacts![0]!.parts[0]!.text, 'One answer, six receivers.');
    expect((await renders()).push - before.push).toBe(1);
  });
});
