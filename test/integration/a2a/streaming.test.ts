import { TaskState, type StreamResponse } from '@a2a-js/sdk';
import { describe, expect, it } from 'vitest';
import { expectFenced } from '../../helpers/agent-text.js';
import { hex, useHarness } from '../../helpers/bridge-harness.js';

/**
 * Streaming through the official @a2a-js/sdk client (A2A v1.0 §3.1.2, §3.1.6, §9.4.2): Dovecot on
 * loopback with `mailbox.watch = false` (the watcher runs on demand while a stream is open), a
 * webhook receiver verifying with standardwebhooks, DKIM-signed replies APPENDed over IMAP.
 */

// A stream of SendStreamingMessage follows the task for wait_budget_s after the first attempt.
const suite = useHarness({ serverToml: 'wait_budget_s = 6\ncaller_timeout_s = 60\nstream_keepalive_s = 1' });

function sdkMessage(text: string, contextId: string) {
  return { message: { role: 1, parts: [{ content: { $case: 'text', value: text }, mediaType: 'text/plain' }], messageId: hex(16), contextId } } as never;
}

type Payload = NonNullable<StreamResponse['payload']>;
/** What an event is, for asserting the sequence: `task:SUBMITTED`, `status:WORKING`, `artifact`. */
function label(p: Payload): string {
  switch (p.$case) {
    case 'task':
      return `task:${TaskState[p.value.status!.state].replace('TASK_STATE_', '')}`;
    case 'statusUpdate':
      return `status:${TaskState[p.value.status!.state].replace('TASK_STATE_', '')}`;
    case 'artifactUpdate':
      return 'artifact';
    case 'message':
      return 'message';
  }
}

/** Reads a stream into `seen` until it ends; resolves when it ended. */
async function drain(stream: AsyncIterable<StreamResponse>, seen: Payload[], onEvent?: (p: Payload) => void): Promise<void> {
  for await (const e of stream) {
    seen.push(e.payload!);
    onEvent?.(e.payload!);
  }
}

describe('streaming (SDK client, watch = false)', () => {
  it('sendMessageStream on a new task: the Task, WORKING, then — after a signed reply with a file and JSON is APPENDed — the artifacts and COMPLETED, with the parts GetTask shows, and the stream closes', async () => {
    const { h, dovecot } = suite;
    expect(h.config.mailbox.watch).toBe(false);
    const seen: Payload[] = [];
    let working!: () => void;
    const isWorking = new Promise<void>((r) => (working = r));
    const done = drain(h.client.sendMessageStream(sdkMessage('Stream me a survey', `ctx-${hex(8)}`)), seen, (p) => {
      if (p.$case === 'statusUpdate' && p.value.status!.state === TaskState.TASK_STATE_WORKING) working();
    });
    await isWorking;
    const first = seen[0]!;
    expect(first.$case).toBe('task');
    const taskId = first.$case === 'task' ? first.value.id : '';
    const envelope = h.receiver.requests.map((r) => r.envelope!).find((e) => e.task_id === taskId)!;
    await dovecot.append(
      await h.reply(envelope, {
        answer: 'Streamed answer.',
        attachments: [
          { filename: 'survey.csv', contentType: 'text/csv', content: 'name,score\nA,1\n' },
          { filename: 'survey.json', contentType: 'application/json', content: '{"best": "A"}' },
        ],
      }),
    );
    await done;
    expect(seen.map(label)).toEqual(['task:SUBMITTED', 'status:WORKING', 'artifact', 'artifact', 'status:COMPLETED']);
    for (const p of seen.slice(1)) expect(p.$case !== 'task' && p.$case !== 'message' && p.value.taskId).toBe(taskId);

    // The stream's artifacts and final status are GetTask's, part for part: one view renders both (src/core/task-view.ts).
    const got = await h.client.getTask({ tenant: '', id: taskId });
    const streamed = seen.flatMap((p) => (p.$case === 'artifactUpdate' ? [p.value.artifact!] : []));
    expect(streamed).toEqual(got.artifacts);
    const last = seen.at(-1)!;
    expect(last.$case === 'statusUpdate' && last.value.status).toEqual(got.status);
    const [reply, files] = streamed;
    expectFenced(reply!.parts[0]!.content?.$case === 'text' ? reply!.parts[0]!.content.value : '', 'Streamed answer.');
    expect(reply!.parts[0]!.metadata).toMatchObject({ untrusted: true, source: 'agent', agent: 'grok' });
    expect(reply!.parts[1]!.metadata).toMatchObject({ untrusted: false, source: 'bridge' });
    expect(files!.parts.map((p) => p.content?.$case)).toEqual(['raw', 'data']);
    expect(files!.parts[0]!.filename).toBe('survey.csv');
    expect((files!.parts[1]!.content as { $case: 'data'; value: unknown }).value).toEqual({ best: 'A' });
  });

  it('resubscribeTask after a disconnect: the task as the store has it first, then the terminal state', async () => {
    const { h, dovecot } = suite;
    const abort = new AbortController();
    const seen: Payload[] = [];
    let working!: () => void;
    const isWorking = new Promise<void>((r) => (working = r));
    const first = drain(h.client.sendMessageStream(sdkMessage('Stream, then drop', `ctx-${hex(8)}`), { signal: abort.signal }), seen, (p) => {
      if (p.$case === 'statusUpdate' && p.value.status!.state === TaskState.TASK_STATE_WORKING) working();
    }).catch((err: unknown) => err);
    await isWorking;
    abort.abort();
    await first;
    const taskId = seen[0]!.$case === 'task' ? seen[0]!.value.id : '';

    const again: Payload[] = [];
    let firstEvent!: () => void;
    const gotFirst = new Promise<void>((r) => (firstEvent = r));
    const resubscribed = drain(h.client.resubscribeTask({ tenant: '', id: taskId }), again, () => firstEvent());
    await gotFirst;
    expect(again.map(label)).toEqual(['task:WORKING']);
    const envelope = h.receiver.requests.map((r) => r.envelope!).find((e) => e.task_id === taskId)!;
    await dovecot.append(await h.reply(envelope, { answer: 'After the drop.' }));
    await resubscribed;
    expect(again.map(label)).toEqual(['task:WORKING', 'artifact', 'status:COMPLETED']);

    // A finished task: SubscribeToTask is UnsupportedOperationError (§3.1.6); v0.3 tasks/resubscribe yields it and closes.
    await expect(drain(h.client.resubscribeTask({ tenant: '', id: taskId }), [])).rejects.toMatchObject({ envelopeCode: -32004 });
    const res = await fetch(h.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${h.configDir.bearer}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tasks/resubscribe', params: { id: taskId } }),
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = (await res.text())
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)) as { id: number; result: { kind: string; status: { state: string } } });
    expect(events.map((e) => [e.id, e.result.kind, e.result.status.state])).toEqual([[7, 'task', 'completed']]);
  });

  it('a quiet stream carries keep-alive comments; a stream ends after wait_budget_s without a final state; the v0.3 form has final', async () => {
    const { h } = suite;
    const res = await fetch(h.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${h.configDir.bearer}`, 'a2a-version': '0.3' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'v03',
        method: 'message/stream',
        params: { message: { kind: 'message', role: 'user', messageId: hex(16), contextId: `ctx-${hex(8)}`, parts: [{ kind: 'text', text: 'nobody answers this' }] } },
      }),
    });
    const text = await res.text();
    expect(text).toMatch(/^: keep-alive$/m);
    const events = text
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)) as { id: string; result: { kind: string; final?: boolean; status: { state: string } } });
    expect(events.map((e) => [e.result.kind, e.result.status.state, e.result.final])).toEqual([
      ['task', 'submitted', undefined],
      ['status-update', 'working', false],
    ]);
  });

  it('at server.max_streams_per_caller, one more stream closes the oldest (it ends without a final event; nothing is refused); the others stay open', async () => {
    const { h } = suite;
    const max = h.config.server.maxStreamsPerCaller;
    const task = (await h.client.sendMessage(sdkMessage('A job to follow from many streams', `ctx-${hex(8)}`))) as { id: string };
    const subscribe = async (id: number): Promise<{ first: string; rest: Promise<string>; stop: () => void }> => {
      const abort = new AbortController();
      const res = await fetch(h.endpoint, {
        method: 'POST',
        signal: abort.signal,
        headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${h.configDir.bearer}`, 'a2a-version': '1.0' },
        body: JSON.stringify({ jsonrpc: '2.0', id, method: 'SubscribeToTask', params: { id: task.id } }),
      });
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      let first = '';
      while (!first.includes('\n\n')) first += (await reader.read()).value ?? '';
      const rest = (async () => {
        let text = '';
        for (let r = await reader.read(); !r.done; r = await reader.read()) text += r.value;
        return text;
      })().catch(() => 'aborted');
      return { first, rest, stop: () => abort.abort() };
    };
    const streams = [];
    for (let i = 0; i < max; i++) streams.push(await subscribe(i));
    const extra = await subscribe(max);
    expect(extra.first).toMatch(/^data: .*"task"/m);
    // The oldest ended, with nothing after its first event (no final state: a client subscribes again).
    expect((await streams[0]!.rest).split('\n').filter((l) => l.startsWith('data: '))).toEqual([]);
    for (const s of [...streams.slice(1), extra]) s.stop();
    await Promise.all([...streams.slice(1), extra].map((s) => s.rest));
  });
});
