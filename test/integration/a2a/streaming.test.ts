import { TaskState, type StreamResponse } from '@a2a-js/sdk';
import { describe, expect, it } from 'vitest';
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
  it('sendMessageStream on a new task: the Task, WORKING, then — after a signed reply is APPENDed — the artifact and COMPLETED, and the stream closes', async () => {
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
    await dovecot.append(await h.reply(envelope, { answer: 'Streamed answer.' }));
    await done;
    expect(seen.map(label)).toEqual(['task:SUBMITTED', 'status:WORKING', 'artifact', 'status:COMPLETED']);
    const artifact = seen[2]!;
    expect(artifact.$case === 'artifactUpdate' && artifact.value.artifact!.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : ''))).toEqual([
      '[UNTRUSTED — grok reply, verify before acting]\nStreamed answer.',
    ]);
    for (const p of seen.slice(1)) expect(p.$case !== 'task' && p.$case !== 'message' && p.value.taskId).toBe(taskId);
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
});
