import { describe, expect, it } from 'vitest';
import { retryRefusal, type RetryFacts } from '../../../src/cli/retry-refusal.js';
import { loadConfig } from '../../../src/config/config.js';
import type { TaskRow } from '../../../src/store/task-rows.js';
import type { TurnRow } from '../../../src/store/turns.js';
import { makeConfigDir, minimalToml } from '../../helpers/config-dir.js';

const NOW = Date.parse('2026-06-01T12:00:00Z');
const c = makeConfigDir(minimalToml());
const agent = loadConfig(c.configPath).agents[0]!;
const id = '5f92b50d-e4ec-41ba-823f-7e7281c53eee';
const task = (o: Partial<TaskRow>): TaskRow => ({ id, agent: 'grok', contextId: 'ctx-1', state: 'SUBMITTED', stateReason: 'task stored; dispatch pending', failedBy: null, turn: 1, caller: null, createdAt: NOW - 60_000, updatedAt: NOW - 60_000, deadlineAt: NOW + 3_600_000, ...o });
const turn = (o: Partial<TurnRow>): TurnRow => ({
  taskId: id, turn: 1, ask: 'job', replyToken: null, deadlineAt: NOW + 3_600_000, dispatchId: 'msg_1', envelope: Buffer.from('{}'), dispatchState: 'pending',
  nextAttemptAt: NOW + 30_000, acceptedAt: null, replyStatus: null, replyText: null, replyLedgerId: null, repliedAt: null, createdAt: NOW - 60_000, ...o,
});
const facts = (t: Partial<TaskRow>, u: Partial<TurnRow> = {}, o: Partial<RetryFacts> = {}): RetryFacts => ({ task: task(t), turn: turn(u), attempts: [], agent, watch: false, bridgeRunning: true, now: NOW, configFile: c.configPath, ...o });

describe('retry: the rule, said plainly', () => {
  it('a task FAILED by dispatch can be retried', () => {
    expect(retryRefusal(facts({ state: 'FAILED', failedBy: 'dispatch' }, { dispatchState: 'failed' }))).toBeNull();
  });

  it('SUBMITTED: the bridge retries by itself; when, and until when', () => {
    const attempts = [{ id: 1, dispatchId: 'msg_1', taskId: id, turn: 1, attempt: 1, startedAt: NOW - 50_000, finishedAt: NOW - 49_000, outcome: 'retry' as const, httpStatus: 503, error: 'HTTP 503' }];
    const text = retryRefusal(facts({}, {}, { attempts, watch: true }))!;
    expect(text).toBe(
      `task ${id} is SUBMITTED: its webhook has not been accepted yet, and the bridge retries it by itself; attempt 1 failed (HTTP 503); ` +
        'the next automatic attempt (2 of max_attempts 8) is at 2026-06-01T12:00:30Z (in 30 s); the running bridge makes it; ' +
        'attempts stop after 8 attempts or at 2026-06-01T12:59:00Z (max_age_s 3600), and the task then FAILS by dispatch; ' +
        `\`retry\` is for a task that FAILED by dispatch (its attempts exhausted, or refused by the webhook); see every attempt with: a2a-mailbridge --config ${c.configPath} show 5f92b50d`,
    );
    expect(text).not.toMatch(/never accepted/);
  });

  it('SUBMITTED with no bridge running on the store: says none makes the next attempt, and how to start one (trial 6)', () => {
    const text = retryRefusal(facts({}, { nextAttemptAt: NOW - 5_000 }, { attempts: [{ id: 1, dispatchId: 'msg_1', taskId: id, turn: 1, attempt: 1, startedAt: NOW - 50_000, finishedAt: NOW - 49_000, outcome: 'retry' as const, httpStatus: 503, error: 'HTTP 503' }], watch: true, bridgeRunning: false }))!;
    expect(text).toContain(`is due now (since 2026-06-01T11:59:55Z); no bridge runs on this store now, so none makes it: start one (a2a-mailbridge --config ${c.configPath} serve) and it does;`);
    expect(text).not.toContain('the running bridge');
  });

  it('WORKING, INPUT_REQUIRED, FAILED by the agent or the deadline, and finished tasks each say why not', () => {
    const working = retryRefusal(facts({ state: 'WORKING' }, { dispatchState: 'accepted', acceptedAt: NOW - 1000 }));
    expect(working).toMatch(/is WORKING: its webhook was accepted at 2026-06-01T11:59:59Z and the agent has the job/);
    expect(working).toContain(`To start over, cancel it (a2a-mailbridge --config ${c.configPath} cancel 5f92b50d, or the caller's CancelTask) and send the job again`);
    expect(retryRefusal(facts({ state: 'INPUT_REQUIRED' }))).toMatch(/the agent asked the caller a question; answer it on context_id ctx-1/);
    expect(retryRefusal(facts({ state: 'FAILED', failedBy: 'deadline', stateReason: 'deadline passed' }, { dispatchState: 'accepted' }))).toMatch(/FAILED by deadline \(deadline passed\), after its webhook was accepted: the agent had the job/);
    expect(retryRefusal(facts({ state: 'COMPLETED', stateReason: 'completed by reply' }))).toMatch(/is COMPLETED \(completed by reply\): it is finished/);
  });
});
