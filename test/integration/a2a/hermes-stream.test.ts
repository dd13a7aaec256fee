import { describe, expect, it } from 'vitest';
import { hermesBody, hex, useHarness } from '../../helpers/bridge-harness.js';

/**
 * A Hermes-style caller now that the card says `streaming: true` (docs/streaming.md, "Hermes"):
 * Hermes Agent (plugins/platforms/a2a/tools.py) sends each call as SendStreamingMessage, reads
 * until an event carries a terminal state, and when the stream ends without one sends the same
 * body again as SendMessage. The bridge must answer that at once with the same task (never a
 * second dispatch), and polls must go the same way. Default answer times (`wait_budget_s = 0`).
 */

const suite = useHarness({});

const TERMINAL = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);

interface Outcome {
  /** What the stream carried: `task:STATE` / `status:STATE` / `artifact`. */
  streamed: string[];
  /** The re-send as SendMessage, when the stream ended without a terminal state. */
  fallback?: { id: string; state: string; text: string };
  /** The task as Hermes shows it. */
  state: string;
}

/** One Hermes `a2a_call` with streaming: the exact body, as SendStreamingMessage, then the same body as SendMessage. */
async function hermesCall(body: ReturnType<typeof hermesBody>): Promise<Outcome> {
  const { h } = suite;
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${h.configDir.bearer}`, 'a2a-version': '1.0', 'user-agent': 'Hermes-A2A/1.0' };
  const res = await fetch(h.endpoint, { method: 'POST', headers: { ...headers, accept: 'text/event-stream' }, body: JSON.stringify({ ...body, method: 'SendStreamingMessage' }) });
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const streamed: string[] = [];
  let terminal: string | undefined;
  for (const line of (await res.text()).split('\n')) {
    if (!line.startsWith('data:')) continue;
    const r = (JSON.parse(line.slice(5)) as { result: { task?: { status: { state: string } }; statusUpdate?: { status: { state: string } }; artifactUpdate?: unknown } }).result;
    const state = r.task?.status.state ?? r.statusUpdate?.status.state;
    streamed.push(r.artifactUpdate ? 'artifact' : `${r.task ? 'task' : 'status'}:${state!.replace('TASK_STATE_', '')}`);
    if (state && TERMINAL.has(state)) terminal = state;
  }
  if (terminal) return { streamed, state: terminal };
  const again = await fetch(h.endpoint, { method: 'POST', headers, body: JSON.stringify(body) });
  const task = ((await again.json()) as { result: { task: { id: string; status: { state: string; message?: { parts: { text: string }[] } } } } }).result.task;
  return { streamed, fallback: { id: task.id, state: task.status.state, text: task.status.message?.parts[0]?.text ?? '' }, state: task.status.state };
}

describe('a Hermes-style caller with streaming: true', () => {
  it('a new job: the stream carries the task and the webhook outcome and ends; the re-send as SendMessage is the same task, WORKING, with no second dispatch; polls go the same way until the reply reaches the stream', async () => {
    const { h, dovecot } = suite;
    const ctx = `ctx-${hex(8)}`;
    const hooks = h.receiver.requests.length;
    const job = await hermesCall(hermesBody('Survey RAG papers', ctx));
    expect(job.streamed).toEqual(['task:SUBMITTED', 'status:WORKING']);
    expect(job.fallback).toMatchObject({ state: 'TASK_STATE_WORKING' });
    expect(job.fallback!.text).toMatch(/is with the cloud agent grok/);
    expect(h.receiver.requests.length).toBe(hooks + 1);

    const poll = await hermesCall(hermesBody('status', ctx));
    expect(poll.streamed).toEqual(['task:WORKING']);
    expect(poll.fallback).toMatchObject({ id: job.fallback!.id, state: 'TASK_STATE_WORKING' });

    const envelope = h.receiver.requests.map((r) => r.envelope!).find((e) => e.task_id === job.fallback!.id)!;
    await dovecot.append(await h.reply(envelope, { answer: 'Three papers.' }));
    const done = await hermesCall(hermesBody('status', ctx));
    // The watcher the earlier streams started (on demand) may have applied it already: then it is the first event.
    expect(done.streamed.filter((e) => e.endsWith(':COMPLETED'))).toHaveLength(1);
    expect(done.fallback).toBeUndefined();
    expect(done.state).toBe('TASK_STATE_COMPLETED');
    expect(h.receiver.requests.length).toBe(hooks + 1);
  });
});
