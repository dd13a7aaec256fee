import { rmSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { retryDispatch } from '../../../src/core/retry.js';
import { attemptDispatch } from '../../../src/core/dispatch.js';
import { type AttemptRow } from '../../../src/store/attempts.js';
import { type TurnRow } from '../../../src/store/turns.js';
import { AGENT_ADDRESS, hermesBody, startHarness, type Harness } from '../../helpers/bridge-harness.js';
import { TEST_WEBHOOK_BEARER, TEST_WEBHOOK_SECRET } from '../../helpers/config-dir.js';
import { startDovecot, type DovecotHandle } from '../../helpers/dovecot.js';
import { startWebhookReceiver, type PlannedResponse, type RecordedRequest, type WebhookReceiver } from '../../helpers/webhook-receiver.js';
import { healthOf, newContext, shown, statusMessage } from './caller-view.js';
import { Summary } from './summary.js';
import type { V1Task } from '../../../src/a2a/wire.js';

/**
 * Webhook delivery faults. Each test drives the bridge through the A2A surface (Hermes-style
 * SendMessage on one context, polls with the poll word `status`) against a real loopback receiver
 * that verifies the Standard Webhooks signature, and asserts: the task's state and reason text, the
 * POSTs the receiver got, one distinct `webhook-id` per dispatch, a fresh timestamp and signature
 * per attempt, and the attempt rows in SQLite. The clock is moved with `h.advance` (never more than
 * the receivers' ±5 min signature tolerance in one test).
 */
let dovecot: DovecotHandle;
const live: Harness[] = [];
const extra: WebhookReceiver[] = [];
const summary = new Summary('Webhook delivery faults (test/integration/faults/webhook.test.ts)');

beforeAll(async () => {
  dovecot = await startDovecot();
});
afterEach(async () => {
  for (const h of live.splice(0)) {
    await h.close();
    rmSync(h.configDir.dir, { recursive: true, force: true });
  }
  for (const r of extra.splice(0)) await r.close();
});
afterAll(async () => {
  await dovecot?.stop();
  summary.print();
});

/** A harness whose receiver answers with `respond`; no mailbox check is due after the one at start. */
async function harness(respond: (req: RecordedRequest, n: number) => PlannedResponse, webhookToml = '', mailboxToml = 'check_interval_s = 3600'): Promise<Harness> {
  const h = await startHarness({ dovecot, respond, webhookToml, mailboxToml });
  live.push(h);
  return h;
}

/** One Hermes-style call; returns the wire task and how long the answer took. */
async function call(h: Harness, text: string, ctx: string): Promise<{ task: V1Task; ms: number }> {
  const started = performance.now();
  const r = await h.rpc(hermesBody(text, ctx));
  expect(r.status).toBe(200);
  expect(r.json.error).toBeUndefined();
  return { task: r.json.result!.task!, ms: performance.now() - started };
}

const db = (h: Harness) => h.app.bridge.ctx.store;
const attempts = (h: Harness, taskId: string): AttemptRow[] => db(h).attempts.ofTask(taskId);
const turnOf = (h: Harness, taskId: string, turn = 1): TurnRow => db(h).turns.get(taskId, turn)!;

/** The per-attempt headers: one id for the whole dispatch, and a timestamp and signature per attempt, all distinct. */
function expectOneDispatch(reqs: RecordedRequest[], dispatchId: string): void {
  expect(new Set(reqs.map((r) => r.id))).toEqual(new Set([dispatchId]));
  expect(new Set(reqs.map((r) => r.timestamp)).size).toBe(reqs.length);
  expect(new Set(reqs.map((r) => r.signature)).size).toBe(reqs.length);
  // The same signed bytes every time, each attempt verifying on its own (fresh signature over a fresh timestamp).
  for (const r of reqs) {
    expect(r.verified, r.failure ?? '').toBe(true);
    expect(r.body.equals(reqs[0]!.body)).toBe(true);
  }
}

const outcomes = (rows: AttemptRow[]): string => rows.map((a) => `#${a.attempt} ${a.outcome}${a.httpStatus ? ` ${a.httpStatus}` : ''}${a.error && !a.httpStatus ? ` (${a.error})` : ''}`).join(', ');

describe('webhook delivery faults', () => {
  it('network error (receiver port closed): stays SUBMITTED with the reason, retried on a later call with the same webhook-id', async () => {
    const h = await harness(() => ({ status: 202 }));
    const port = Number(new URL(h.receiver.url).port);
    await h.receiver.close();
    const ctx = newContext();

    const first = await call(h, 'Summarise the report', ctx);
    expect(first.task.status.state).toBe('TASK_STATE_SUBMITTED');
    const id = first.task.id;
    const [a1] = attempts(h, id);
    expect(a1).toMatchObject({ attempt: 1, outcome: 'retry', httpStatus: null, error: 'network error: ECONNREFUSED' });
    const t1 = turnOf(h, id);
    expect(t1.dispatchState).toBe('pending');
    const delay = t1.nextAttemptAt! - a1!.finishedAt!;
    expect(delay).toBeGreaterThanOrEqual(1000); // 2 s backoff with jitter in [50 %, 100 %]
    expect(delay).toBeLessThanOrEqual(2000);
    expect(statusMessage(first.task)).toMatch(
      new RegExp(`^The webhook to grok has not been accepted yet \\(attempt 1: network error: ECONNREFUSED\\)\\. Next attempt at \\S+Z\\. Deadline \\S+ \\(in 60 min\\)\\. Call again with context_id ${ctx} to check \\(send "status"\\)\\.$`),
    );

    // Not due yet: a poll sends nothing.
    expect((await call(h, 'status', ctx)).task.status.state).toBe('TASK_STATE_SUBMITTED');
    expect(attempts(h, id)).toHaveLength(1);

    // The receiver comes back on the same port; the next call after the backoff delivers.
    const back = await startWebhookReceiver({ secret: TEST_WEBHOOK_SECRET, bearer: TEST_WEBHOOK_BEARER, port });
    extra.push(back);
    h.advance(2500);
    const later = await call(h, 'status', ctx);
    expect(later.task.status.state).toBe('TASK_STATE_WORKING');
    expect(back.requests).toHaveLength(1);
    expect(back.distinctIds()).toEqual([t1.dispatchId]);
    expect(back.requests[0]!.verified).toBe(true);
    const rows = attempts(h, id);
    expect(rows.map((a) => [a.attempt, a.outcome, a.httpStatus])).toEqual([[1, 'retry', null], [2, 'accepted', 202]]);
    expect(rows.every((a) => a.dispatchId === t1.dispatchId)).toBe(true);
    summary.add(
      'network error (receiver port closed)',
      `SUBMITTED, status "has not been accepted yet (attempt 1: network error: ECONNREFUSED). Next attempt at …" (backoff ${delay} ms); 0 POSTs while closed; after the port reopened the next poll delivered: 1 POST, 1 webhook-id (= the dispatch's), attempts [${outcomes(rows)}] → WORKING`,
    );
  });

  it('timeout (receiver hangs): the attempt ends at timeout_s, the task stays SUBMITTED, the next attempt reuses the webhook-id', async () => {
    const h = await harness((_r, n) => (n === 1 ? 'hang' : { status: 202 }), 'timeout_s = 1');
    const ctx = newContext();
    const first = await call(h, 'Summarise the report', ctx);
    expect(first.ms).toBeGreaterThanOrEqual(900);
    expect(first.ms).toBeLessThan(3000);
    expect(first.task.status.state).toBe('TASK_STATE_SUBMITTED');
    const id = first.task.id;
    expect(attempts(h, id)).toMatchObject([{ attempt: 1, outcome: 'retry', httpStatus: null, error: 'timed out after 1000 ms' }]);
    expect(statusMessage(first.task)).toMatch(/^The webhook to grok has not been accepted yet \(attempt 1: timed out after 1000 ms\)\. Next attempt at \S+Z\./);

    h.advance(2500);
    const later = await call(h, 'status', ctx);
    expect(later.task.status.state).toBe('TASK_STATE_WORKING');
    expect(h.receiver.requests).toHaveLength(2);
    expectOneDispatch(h.receiver.requests, turnOf(h, id).dispatchId);
    const rows = attempts(h, id);
    expect(rows.map((a) => [a.attempt, a.outcome, a.httpStatus])).toEqual([[1, 'retry', null], [2, 'accepted', 202]]);
    summary.add(
      'timeout (receiver hangs, timeout_s = 1)',
      `first call answered after ${Math.round(first.ms)} ms: SUBMITTED, attempt 1 "timed out after 1000 ms"; next poll after the backoff: 2 POSTs, 1 webhook-id, 2 timestamps/signatures, attempts [${outcomes(rows)}] → WORKING`,
    );
  });

  it('503 with retry-after: the next attempt waits the asked time and happens on a later call', async () => {
    const h = await harness((_r, n) => (n === 1 ? { status: 503, headers: { 'retry-after': '120' } } : { status: 202 }));
    const ctx = newContext();
    const first = await call(h, 'Summarise the report', ctx);
    expect(first.task.status.state).toBe('TASK_STATE_SUBMITTED');
    const id = first.task.id;
    const [a1] = attempts(h, id);
    expect(a1).toMatchObject({ attempt: 1, outcome: 'retry', httpStatus: 503, error: 'HTTP 503' });
    const wait = turnOf(h, id).nextAttemptAt! - a1!.finishedAt!;
    expect(wait).toBe(120_000); // retry-after (120 s) beats the 1–2 s backoff
    expect(statusMessage(first.task)).toMatch(/\(attempt 1: HTTP 503\)\. Next attempt at \S+Z\./);

    h.advance(60_000);
    expect((await call(h, 'status', ctx)).task.status.state).toBe('TASK_STATE_SUBMITTED');
    expect(h.receiver.requests).toHaveLength(1); // honoured: nothing before 120 s

    h.advance(61_000);
    const later = await call(h, 'status', ctx);
    expect(later.task.status.state).toBe('TASK_STATE_WORKING');
    expect(h.receiver.requests).toHaveLength(2);
    expectOneDispatch(h.receiver.requests, turnOf(h, id).dispatchId);
    expect(Number(h.receiver.requests[1]!.timestamp) - Number(h.receiver.requests[0]!.timestamp)).toBeGreaterThanOrEqual(120);
    summary.add(
      '503 with retry-after: 120',
      `SUBMITTED; next attempt scheduled exactly 120 s later (not 1–2 s backoff); poll at +60 s sent nothing; poll at +121 s sent attempt 2 (same webhook-id, timestamp +${Number(h.receiver.requests[1]!.timestamp) - Number(h.receiver.requests[0]!.timestamp)} s) → WORKING; 2 POSTs, 1 id`,
    );
  });

  it.each([
    [429, { 'retry-after': '30' }],
    [408, {}],
  ] as const)('%i is retried (backoff, retry-after honoured), then accepted', async (status, headers) => {
    const h = await harness((_r, n) => (n === 1 ? { status, headers } : { status: 202 }));
    const ctx = newContext();
    const first = await call(h, 'Summarise the report', ctx);
    expect(first.task.status.state).toBe('TASK_STATE_SUBMITTED');
    const id = first.task.id;
    const [a1] = attempts(h, id);
    expect(a1).toMatchObject({ attempt: 1, outcome: 'retry', httpStatus: status, error: `HTTP ${status}` });
    const wait = turnOf(h, id).nextAttemptAt! - a1!.finishedAt!;
    if (status === 429) expect(wait).toBe(30_000);
    else expect(wait).toBeLessThanOrEqual(2000);
    h.advance(wait + 1000);
    expect((await call(h, 'status', ctx)).task.status.state).toBe('TASK_STATE_WORKING');
    expect(h.receiver.requests).toHaveLength(2);
    expectOneDispatch(h.receiver.requests, turnOf(h, id).dispatchId);
    summary.add(`HTTP ${status}${status === 429 ? ' (retry-after: 30)' : ''}`, `retried: next attempt after ${wait} ms, then 202 → WORKING; 2 POSTs, 1 webhook-id, attempts [${outcomes(attempts(h, id))}]`);
  });

  it('500 on every attempt until max_attempts: FAILED "dispatch exhausted after N attempts: <last error>", then nothing more is sent', async () => {
    const h = await harness(() => ({ status: 500 }), 'max_attempts = 3');
    const ctx = newContext();
    let r = await call(h, 'Summarise the report', ctx);
    const id = r.task.id;
    for (let i = 2; i <= 3; i++) {
      expect(r.task.status.state).toBe('TASK_STATE_SUBMITTED');
      h.advance(5000);
      r = await call(h, 'status', ctx);
    }
    expect(r.task.status.state).toBe('TASK_STATE_FAILED');
    expect(shown(r.task)).toBe('Failed: dispatch exhausted after 3 attempts (max_attempts 3): HTTP 500.');
    const rows = attempts(h, id);
    expect(rows.map((a) => [a.attempt, a.outcome, a.httpStatus])).toEqual([[1, 'retry', 500], [2, 'retry', 500], [3, 'retry', 500]]);
    expect(db(h).tasks.get(id)).toMatchObject({ state: 'FAILED', failedBy: 'dispatch' });
    expect(turnOf(h, id)).toMatchObject({ dispatchState: 'failed', nextAttemptAt: null });

    h.advance(600_000);
    await call(h, 'status', ctx);
    expect(h.receiver.requests).toHaveLength(3);
    expectOneDispatch(h.receiver.requests, turnOf(h, id).dispatchId);
    expect((await healthOf(h)).dispatches).toEqual({ pending: 0, failed: 1 });
    summary.add('HTTP 500 until max_attempts = 3', `3 POSTs (1 webhook-id, 3 timestamps/signatures), attempts [${outcomes(rows)}] → FAILED "dispatch exhausted after 3 attempts (max_attempts 3): HTTP 500"; no POST after; /health dispatches.failed = 1`);
  });

  it('max_age_s exceeded: FAILED with the last error on the next call, without another POST', async () => {
    const h = await harness(() => ({ status: 503 }), 'max_age_s = 30');
    const ctx = newContext();
    const first = await call(h, 'Summarise the report', ctx);
    expect(first.task.status.state).toBe('TASK_STATE_SUBMITTED');
    const id = first.task.id;
    h.advance(31_000);
    const later = await call(h, 'status', ctx);
    expect(later.task.status.state).toBe('TASK_STATE_FAILED');
    expect(shown(later.task)).toBe('Failed: dispatch exhausted after 1 attempt (max_age_s 30): HTTP 503.');
    expect(h.receiver.requests).toHaveLength(1);
    expect(attempts(h, id).map((a) => [a.attempt, a.outcome, a.httpStatus])).toEqual([[1, 'retry', 503]]);
    expect(db(h).tasks.get(id)).toMatchObject({ state: 'FAILED', failedBy: 'dispatch' });
    summary.add('max_age_s = 30 exceeded (503s)', `poll at +31 s → FAILED "dispatch exhausted after 1 attempt (max_age_s 30): HTTP 503" without a new POST; 1 POST in total`);
  });

  it.each([301, 302])('%i: FAILED at once, the redirect is not followed', async (status) => {
    let location = '';
    const h = await harness(() => ({ status, headers: { location } }));
    location = new URL('/elsewhere', h.receiver.url).href;
    const ctx = newContext();
    const r = await call(h, 'Summarise the report', ctx);
    expect(r.task.status.state).toBe('TASK_STATE_FAILED');
    expect(shown(r.task)).toBe(`Failed: the webhook refused the job (HTTP ${status}); check agents.webhook.url and its auth.`);
    expect(h.receiver.requests.map((q) => q.path)).toEqual(['/hook']);
    expect(attempts(h, r.task.id).map((a) => [a.attempt, a.outcome, a.httpStatus])).toEqual([[1, 'failed', status]]);
    h.advance(600_000);
    await call(h, 'status', ctx);
    expect(h.receiver.requests).toHaveLength(1);
    summary.add(`HTTP ${status} (location: /elsewhere)`, `FAILED at once "the webhook refused the job (HTTP ${status}); check agents.webhook.url and its auth"; 1 POST, redirect not followed, no retry`);
  });

  it.each([400, 401, 404])('%i: FAILED at once with the reason, no retry', async (status) => {
    const h = await harness(() => ({ status }));
    const ctx = newContext();
    const r = await call(h, 'Summarise the report', ctx);
    expect(r.task.status.state).toBe('TASK_STATE_FAILED');
    expect(shown(r.task)).toBe(`Failed: the webhook refused the job (HTTP ${status}); check agents.webhook.url and its auth.`);
    expect(attempts(h, r.task.id).map((a) => [a.attempt, a.outcome, a.httpStatus])).toEqual([[1, 'failed', status]]);
    h.advance(600_000);
    await call(h, 'status', ctx);
    expect(h.receiver.requests).toHaveLength(1);
    summary.add(`HTTP ${status}`, `FAILED at once "the webhook refused the job (HTTP ${status}); …"; 1 POST, no retry`);
  });

  it('410 Gone: FAILED and dispatch stopped', async () => {
    const h = await harness(() => ({ status: 410 }));
    const ctx = newContext();
    const r = await call(h, 'Summarise the report', ctx);
    expect(r.task.status.state).toBe('TASK_STATE_FAILED');
    expect(shown(r.task)).toBe('Failed: the webhook answered HTTP 410 Gone; dispatch stopped.');
    expect(attempts(h, r.task.id).map((a) => [a.attempt, a.outcome, a.httpStatus])).toEqual([[1, 'gone', 410]]);
    expect(turnOf(h, r.task.id)).toMatchObject({ dispatchState: 'failed', nextAttemptAt: null });
    for (let i = 0; i < 3; i++) {
      h.advance(120_000);
      await call(h, 'status', ctx);
    }
    expect(h.receiver.requests).toHaveLength(1);
    summary.add('HTTP 410', 'FAILED at once "the webhook answered HTTP 410 Gone; dispatch stopped"; 1 POST, none after 3 later polls');
  });

  it('50 concurrent polls while an attempt hangs: never two sends of one dispatch at once', async () => {
    const h = await harness((_r, n) => (n === 1 ? { status: 503 } : n === 2 ? 'hang' : { status: 202 }), 'timeout_s = 2', 'check_interval_s = 3600\ncheck_wait_ms = 300');
    const ctx = newContext();
    const first = await call(h, 'Summarise the report', ctx);
    const id = first.task.id;
    expect(attempts(h, id)).toHaveLength(1);

    h.advance(3000); // attempt 2 is due
    const burst = async (): Promise<V1Task[]> => {
      const answers = await Promise.all(Array.from({ length: 50 }, () => h.rpc(hermesBody('status', ctx))));
      for (const a of answers) {
        expect(a.status).toBe(200);
        expect(a.json.error).toBeUndefined();
      }
      return answers.map((a) => a.json.result!.task!);
    };
    const during = await burst();
    expect(h.receiver.requests).toHaveLength(2);
    const inFlight = attempts(h, id);
    expect(inFlight.map((a) => [a.attempt, a.outcome])).toEqual([[1, 'retry'], [2, null]]);
    expect(during.every((t) => t.status.state === 'TASK_STATE_SUBMITTED')).toBe(true);
    expect(statusMessage(during.at(-1))).toMatch(/^The webhook to grok is being delivered \(attempt 2, started \S+Z; it times out at \S+Z\)\. Deadline/); // no "Next attempt at": the lease is no schedule

    // Another caller of the store (the CLI, a second process) that bypasses this process's single
    // flight is stopped by the lease committed before the POST.
    expect(await attemptDispatch(h.app.bridge.ctx, turnOf(h, id).dispatchId)).toBeNull();
    expect(h.receiver.requests).toHaveLength(2);

    // Even with the clock past the attempt's lease (timeout + 30 s), the running attempt is not doubled.
    h.advance(40_000);
    await burst();
    expect(h.receiver.requests).toHaveLength(2);

    await h.app.bridge.idle(); // attempt 2 times out
    expect(attempts(h, id).map((a) => [a.attempt, a.outcome, a.error])).toEqual([[1, 'retry', 'HTTP 503'], [2, 'retry', 'timed out after 2000 ms']]);
    h.advance(5000);
    expect((await call(h, 'status', ctx)).task.status.state).toBe('TASK_STATE_WORKING');
    expect(h.receiver.requests).toHaveLength(3);
    expectOneDispatch(h.receiver.requests, turnOf(h, id).dispatchId);
    const starts = attempts(h, id).map((a) => a.startedAt);
    const ends = attempts(h, id).map((a) => a.finishedAt!);
    for (let i = 1; i < starts.length; i++) expect(starts[i]!).toBeGreaterThanOrEqual(ends[i - 1]!); // never overlapping
    summary.add(
      '100 polls (2 bursts of 50) while attempt 2 hangs, second burst past the lease',
      `0 errors, every answer SUBMITTED "being delivered (attempt 2 …)"; receiver saw 2 POSTs during the hang (no concurrent second send; a direct attemptDispatch bypassing the in-process single flight was refused by the SQLite lease), 3 in total after the timeout and the retry, 1 webhook-id, attempts never overlap → WORKING`,
    );
  });

  it('operator retry: re-dispatches a dispatch-failed task with a new webhook-id and a fresh token; refuses other tasks', async () => {
    const h = await harness((_r, n) => (n === 1 ? { status: 404 } : { status: 202 }));
    const ctx = newContext();
    const r = await call(h, 'Summarise the report', ctx);
    expect(r.task.status.state).toBe('TASK_STATE_FAILED');
    const id = r.task.id;
    const oldTurn = turnOf(h, id);
    const agent = h.config.agents[0]!;
    const bridgeCtx = h.app.bridge.ctx;

    const { task, dispatchId } = retryDispatch(bridgeCtx, agent, id);
    expect(task).toMatchObject({ id, state: 'SUBMITTED', failedBy: null });
    expect(dispatchId).not.toBe(oldTurn.dispatchId);
    const result = await attemptDispatch(bridgeCtx, dispatchId);
    expect(result).toMatchObject({ outcome: 'accepted', httpStatus: 202 });
    expect(db(h).tasks.get(id)!.state).toBe('WORKING');

    const [req1, req2] = h.receiver.requests;
    expect(h.receiver.requests).toHaveLength(2);
    expect(req1!.id).toBe(oldTurn.dispatchId);
    expect(req2!.id).toBe(dispatchId);
    expect(req2!.verified).toBe(true);
    const env1 = req1!.envelope!;
    const env2 = req2!.envelope!;
    expect(env2.reply_token).toMatch(/^[0-9a-f]{32}$/);
    expect(env2.reply_token).not.toBe(env1.reply_token);
    expect(env2).toMatchObject({ task_id: id, turn: 1, ask: env1.ask, thread: env1.thread, subject_tag: env1.subject_tag, reply_to: env1.reply_to });
    expect(env2.constraints).toContain(env2.reply_token);
    expect(env2.constraints).toContain(`, from ${AGENT_ADDRESS} (mail from any other address is refused), before ${env2.deadline}.`);
    expect(db(h).attempts.ofTask(id).map((a) => [a.dispatchId, a.attempt, a.outcome, a.httpStatus])).toEqual([
      [oldTurn.dispatchId, 1, 'failed', 404],
      [dispatchId, 1, 'accepted', 202],
    ]);
    expect(db(h).events.of(id).map((e) => `${e.fromState}->${e.toState}`)).toEqual(['null->SUBMITTED', 'SUBMITTED->FAILED', 'FAILED->SUBMITTED', 'SUBMITTED->WORKING']);

    // The old token is dead, the new one applies.
    await dovecot.append(await h.reply(env1, { answer: 'from the first envelope', date: new Date(bridgeCtx.now()) }));
    await dovecot.append(await h.reply(env2, { answer: 'from the retried envelope', date: new Date(bridgeCtx.now()) }));
    await h.app.bridge.checkNow();
    expect(db(h).ledger.ofTask(id).map((l) => l.verdict)).toEqual(['bad-token', 'applied:done']);
    const done = await call(h, 'status', ctx);
    expect(done.task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(shown(done.task)).toContain('from the retried envelope');

    // Refused: a completed task, a task whose webhook was accepted, a deadline failure, an unknown id.
    const refused = (taskId: string): unknown => {
      try {
        retryDispatch(bridgeCtx, agent, taskId);
        return null;
      } catch (err) {
        return err;
      }
    };
    expect(refused(id)).toMatchObject({ code: 'task-closed', message: expect.stringMatching(/is completed; only a task that failed by dispatch \(attempts exhausted, or refused by the webhook\) can be retried$/) as unknown });
    const working = await call(h, 'Another job', newContext());
    expect(working.task.status.state).toBe('TASK_STATE_WORKING');
    expect(refused(working.task.id)).toMatchObject({ code: 'task-closed', message: expect.stringMatching(/is working;/) as unknown });
    h.advance(3_601_000);
    await call(h, 'status', working.task.contextId);
    expect(db(h).tasks.get(working.task.id)).toMatchObject({ state: 'FAILED', failedBy: 'deadline' });
    expect(refused(working.task.id)).toMatchObject({ code: 'task-closed', message: expect.stringMatching(/is failed \(failed by deadline\)/) as unknown });
    expect(refused('00000000-0000-4000-8000-000000000000')).toMatchObject({ code: 'task-not-found' });
    expect(h.receiver.requests).toHaveLength(3); // the refusals sent nothing
    summary.add(
      'operator retry of a task FAILED by dispatch (404)',
      'task back to SUBMITTED, attemptDispatch → 202 → WORKING; new webhook-id, fresh reply_token (same task_id/turn/ask/thread); a reply with the old token → bad-token, with the new → applied:done; refused (task-closed) for completed, working and deadline-failed tasks, task-not-found for an unknown id',
    );
  });
});
