import { TaskState, type StreamResponse } from '@a2a-js/sdk';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { describe, expect, it } from 'vitest';
import { hex, useHarness } from '../../helpers/bridge-harness.js';

/**
 * One render per change, whatever the number of streams (docs/streaming.md, "One render per
 * change"): the task view of a committed change is built once for every stream of the task, and
 * each wire event once per dialect (src/core/task-follow.ts, src/a2a/methods-stream.ts), as the
 * metric `a2a_mailbridge_stream_renders_total` counts. Real server, Dovecot, a signed reply.
 */

const suite = useHarness({});

type Family = { name: string; metrics: { value?: string; labels?: Record<string, string> }[] };

/** `a2a_mailbridge_stream_renders_total` by stage, from GET /metrics (0 for a stage not counted yet). */
async function renders(): Promise<{ view: number; event: number }> {
  const res = await fetch(`${new URL(suite.h.endpoint).origin}/metrics`);
  const families = parsePrometheusTextFormat(await res.text()) as Family[];
  const metrics = families.find((f) => f.name === 'a2a_mailbridge_stream_renders_total')?.metrics ?? [];
  const of = (stage: string): number => Number(metrics.find((m) => m.labels?.stage === stage)?.value ?? 0);
  return { view: of('view'), event: of('event') };
}

/** A raw JSON-RPC stream: resolves once its first event is in; `rest` resolves with every event when it ends. */
async function rawStream(method: string, version: string, id: number, taskId: string): Promise<{ rest: Promise<{ id: number; result: Record<string, unknown> }[]> }> {
  const res = await fetch(suite.h.endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${suite.h.configDir.bearer}`, 'a2a-version': version },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { id: taskId } }),
  });
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  while (!text.includes('\n\n')) text += (await reader.read()).value ?? '';
  const rest = (async () => {
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += r.value;
    return text
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)) as { id: number; result: Record<string, unknown> });
  })();
  return { rest };
}

describe('streams of one task share each change\'s rendering', () => {
  it('16 streams (v1.0 raw and through the SDK, v0.3 raw) of one task: the reply\'s change is one task view and one event per dialect and update, and every stream gets it', async () => {
    const { h, dovecot } = suite;
    const task = (await h.client.sendMessage({
      message: { role: 1, parts: [{ content: { $case: 'text', value: 'A job many streams follow' }, mediaType: 'text/plain' }], messageId: hex(16), contextId: `ctx-${hex(8)}` },
    } as never)) as { id: string };
    const streams = h.config.server.maxStreamsPerCaller;
    expect(streams).toBe(16);

    const before = await renders();
    // 7 raw v1.0, 1 through the SDK, 8 raw v0.3: each has its first event (the task, its own) before the reply is mailed.
    const v1 = await Promise.all(Array.from({ length: 7 }, (_, i) => rawStream('SubscribeToTask', '1.0', i, task.id)));
    const v03 = await Promise.all(Array.from({ length: 8 }, (_, i) => rawStream('tasks/resubscribe', '0.3', 100 + i, task.id)));
    const sdkSeen: NonNullable<StreamResponse['payload']>[] = [];
    let sdkFirst!: () => void;
    const sdkStarted = new Promise<void>((r) => (sdkFirst = r));
    const sdkDone = (async () => {
      for await (const e of h.client.resubscribeTask({ tenant: '', id: task.id })) {
        sdkSeen.push(e.payload!);
        sdkFirst();
      }
    })();
    await sdkStarted;
    const opened = await renders();
    // The first event (the task) is rendered once per view and dialect: streams opened while the view cache holds the
    // task's view share it; a commit between two subscribes (each runs a mailbox check) or a second of the clock makes a new one.
    expect(opened.view).toBe(before.view);
    expect(opened.event - before.event).toBeGreaterThanOrEqual(2);
    expect(opened.event - before.event).toBeLessThanOrEqual(streams);

    const envelope = h.receiver.requests.map((r) => r.envelope!).find((e) => e.task_id === task.id)!;
    await dovecot.append(await h.reply(envelope, { answer: 'One answer for sixteen streams.' }));
    const v1Events = await Promise.all(v1.map((s) => s.rest));
    const v03Events = await Promise.all(v03.map((s) => s.rest));
    await sdkDone;

    // Every stream got the artifact and the final status, under its own request id.
    v1Events.forEach((events, i) => {
      expect(events.map((e) => Object.keys(e.result)[0])).toEqual(['task', 'artifactUpdate', 'statusUpdate']);
      expect(events.every((e) => e.id === i)).toBe(true);
      expect(events[2]!.result).toMatchObject({ statusUpdate: { taskId: task.id, status: { state: 'TASK_STATE_COMPLETED' } } });
      expect(events.slice(1)).toEqual(v1Events[0]!.slice(1).map((e) => ({ ...e, id: i })));
    });
    v03Events.forEach((events, i) => {
      expect(events.map((e) => e.result.kind)).toEqual(['task', 'artifact-update', 'status-update']);
      expect(events.every((e) => e.id === 100 + i)).toBe(true);
      expect(events[2]!.result).toMatchObject({ taskId: task.id, status: { state: 'completed' }, final: true });
    });
    expect(sdkSeen.map((p) => p.$case)).toEqual(['task', 'artifactUpdate', 'statusUpdate']);
    const last = sdkSeen[2]!;
    expect(last.$case === 'statusUpdate' && last.value.status!.state).toBe(TaskState.TASK_STATE_COMPLETED);

    // The change: one view for 16 streams; one artifact and one status event per dialect (2 × 2), not per stream (16 × 2).
    expect(await renders()).toEqual({ view: opened.view + 1, event: opened.event + 4 });
  });
});
