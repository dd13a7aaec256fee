import { afterAll, describe, expect, it } from 'vitest';
import { fenceOf, hermesReplyText } from '../../helpers/agent-text.js';
import { hermesBody, hex, useHarness } from '../../helpers/bridge-harness.js';
import type { V1Task } from '../../../src/a2a/wire.js';
import type { RpcAnswer, V1SendResult } from '../../helpers/rpc-json.js';

/**
 * A Hermes-style caller with a 120 s read timeout, and an agent that answers after the deadline.
 * One webhook POST in total; every call answered inside the caller's timeout; the late answer is
 * visible on the next poll; nothing is discarded (ledger and audit agree).
 */
const HERMES_TIMEOUT_MS = 120_000;
const durations: number[] = [];

const suite = useHarness({ agentToml: 'deadline_s = 600' });
afterAll(() => {
  if (durations.length) console.log(`long-task scenario: ${durations.length} calls, slowest ${Math.max(...durations).toFixed(1)} ms`);
});

/** One a2a_call as Hermes makes it: new messageId, same contextId, aborted after 120 s. */
async function hermesCall(text: string, contextId: string): Promise<V1Task> {
  const started = performance.now();
  const res = await fetch(suite.h.endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${suite.h.configDir.bearer}`, 'a2a-version': '1.0' },
    body: JSON.stringify(hermesBody(text, contextId)),
    signal: AbortSignal.timeout(HERMES_TIMEOUT_MS),
  });
  expect(res.status).toBe(200);
  const json = (await res.json()) as RpcAnswer<V1SendResult>;
  durations.push(performance.now() - started);
  return json.result!.task!;
}

/** What Hermes shows the model (test/helpers/agent-text.ts). */
function shown(task: V1Task): string {
  return hermesReplyText(task);
}

describe('a job that outlives its deadline', () => {
  it('fails by deadline with the reason, then keeps and shows the late authenticated answer', async () => {
    const ctx = `ctx-${hex(8)}`;
    let task = await hermesCall('Write a literature review on X', ctx);
    expect(task.status.state).toBe('TASK_STATE_WORKING');
    for (let i = 0; i < 3; i++) expect((await hermesCall('status', ctx)).status.state).toBe('TASK_STATE_WORKING');
    expect(shown(task)).toMatch(new RegExp(`Call again with context_id ${ctx} to check`));

    suite.h.advance(601_000);
    task = await hermesCall('status', ctx);
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(shown(task)).toMatch(/^Failed: deadline \S+ passed with no reply from grok\.$/);

    // The agent finishes after the deadline; its reply is authenticated and carries the live token.
    await suite.dovecot.append(await suite.h.reply(suite.h.envelope(1), { answer: 'The review, finally.' }));
    task = await hermesCall('status', ctx);
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    const [note, reply] = task.artifacts![0]!.parts;
    expect(note!.text).toMatch(/^This reply arrived \S+Z, after the task failed \(deadline\)\. The bridge kept it and did not apply it; the task stays FAILED\.$/);
    expect(fenceOf(reply!.text!).body).toBe('The review, finally.');
    expect(shown(task)).toBe(`${note!.text}\n${reply!.text}`);
    expect(task.status.message!.parts[0]!.text).toMatch(/A late reply from grok arrived \S+, after the deadline; it is in the artifact late-reply-\d+ and was not applied\./);

    // Observers see it through GetTask and ListTasks too.
    const got = (await suite.h.rpc({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: task.id } })).json.result;
    expect(got!.artifacts!.map((a) => a.name)).toEqual(['late-reply']);
    const listed = (await suite.h.rpc({ jsonrpc: '2.0', id: 2, method: 'ListTasks', params: { contextId: ctx, includeArtifacts: true } })).json.result;
    expect(listed!.tasks).toHaveLength(1);
    expect(listed!.tasks[0]!.artifacts![0]!.parts[1]!.text).toBe(reply!.text);

    // One webhook in total; nothing discarded: the ledger keeps the reply, the audit the failure.
    expect(suite.h.receiver.requests).toHaveLength(1);
    const ledger = suite.h.app.bridge.ctx.store.ledger.query({ taskId: task.id, limit: 10 });
    expect(ledger.map((l) => l.verdict)).toEqual(['late:recorded']);
    const audit = suite.h.app.bridge.ctx.store.audit.latest(task.id) as { state: string; failedBy: string; cause: string; verdicts: unknown[]; endedAt: string };
    expect(audit).toMatchObject({ state: 'FAILED', failedBy: 'deadline', verdicts: [] });
    expect(audit.cause).toMatch(/^deadline .* passed with no reply from grok$/);
    // The audit was written at the failure, before the late reply was seen: the two agree in time.
    expect(Date.parse(audit.endedAt)).toBeLessThanOrEqual(ledger[0]!.seenAt);

    // A replay of the late reply changes nothing (its token was used).
    await suite.dovecot.append(await suite.h.reply(suite.h.envelope(1), { answer: 'The review, finally.' }));
    task = await hermesCall('status', ctx);
    expect(task.artifacts).toHaveLength(1);
    expect(suite.h.app.bridge.ctx.store.ledger.query({ taskId: task.id, limit: 10 }).map((l) => l.verdict).sort()).toEqual(['bad-token', 'late:recorded']);
    for (const d of durations) expect(d).toBeLessThan(HERMES_TIMEOUT_MS);
  });
});
