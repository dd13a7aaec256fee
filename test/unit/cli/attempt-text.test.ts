import { describe, expect, it } from 'vitest';
import { attemptDetail, attemptOutcome, attemptResultText } from '../../../src/cli/attempt-text.js';
import { noticeLine } from '../../../src/cli/cancel.js';
import type { AgentConfig } from '../../../src/config/config.js';
import type { DeliveryResult } from '../../../src/downlink/deliver.js';
import { formatStatus, type StatusReport } from '../../../src/cli/status.js';
import { whyText } from '../../../src/cli/tasks.js';
import type { AttemptRow } from '../../../src/store/attempts.js';
import type { StoreReads } from '../../../src/store/store.js';
import type { TaskRow } from '../../../src/store/task-rows.js';
import type { TurnRow } from '../../../src/store/turns.js';

const NOW = Date.parse('2026-06-01T12:00:00Z');

/**
 * A webhook attempt's outcome says its HTTP status once: deliver.ts stores a status-only answer's
 * error as `HTTP 503` beside http_status 503, and the lines printed "(HTTP 503): HTTP 503"
 * (fresh-user trial). Other detail is kept as written.
 */
describe('an attempt line states the HTTP status once', () => {
  it('drops an error that only repeats the status, keeps any other detail', () => {
    expect(attemptDetail(503, 'HTTP 503')).toBeNull();
    expect(attemptDetail(503, 'HTTP 503: upstream busy')).toBe('upstream busy');
    expect(attemptDetail(503, 'HTTP 5030')).toBe('HTTP 5030');
    expect(attemptDetail(null, 'network error: ECONNREFUSED')).toBe('network error: ECONNREFUSED');
    expect(attemptDetail(null, 'timed out after 10000 ms')).toBe('timed out after 10000 ms');
    expect(attemptDetail(202, null)).toBeNull();
  });

  it('status: a failing webhook line of a stored HTTP 503 attempt', () => {
    const report: StatusReport = {
      config: '/c/config.toml',
      bridge: { answering: false, url: 'http://127.0.0.1:8765/health', status: null, version: null, sameStore: null, why: 'connection refused', storeNamed: false, olderBearer: null, claimed: false, taken: false, cannotTell: false },
      store: { path: '/c/state/bridge.sqlite', exists: true, bytes: 4096 },
      tasks: { open: 1, finished: 0, byState: { SUBMITTED: 1 } },
      mailbox: { kind: 'imap', lastCheckAt: null, lastResult: null, lastError: null, errorSince: null, lastRecordedAt: null, lastVerdict: null, notOurs: 0 },
      failingWebhooks: [
        { taskId: '11111111-0000-4000-8000-000000000009', agent: 'grok', turn: 1, attempt: 2, outcome: 'retry', httpStatus: 503, error: 'HTTP 503', nextAttemptAt: '2026-06-01T12:00:10.000Z' },
        { taskId: '22222222-0000-4000-8000-000000000009', agent: 'grok', turn: 1, attempt: 1, outcome: 'retry', httpStatus: null, error: 'network error: ECONNREFUSED', nextAttemptAt: null },
      ],
      dispatchFailuresLast7Days: 0,
      refusedRepliesForOpenTasks: [],
    } as unknown as StatusReport;
    const text = formatStatus(report, NOW);
    // No serve holds the store's claim: the next attempt waits for one (fresh-user trial 6).
    expect(text).toContain('task 11111111 (grok) attempt 2 failed (HTTP 503); next 2026-06-01T12:00:10Z (once a bridge runs): ');
    expect(text).toContain('task 22222222 (grok) attempt 1 failed: network error: ECONNREFUSED: ');
    expect(text).not.toMatch(/HTTP 503\): HTTP 503/);
    const running = formatStatus({ ...report, bridge: { ...report.bridge, claimed: true } }, NOW);
    expect(running).toContain('task 11111111 (grok) attempt 2 failed (HTTP 503); next 2026-06-01T12:00:10Z: ');
  });

  it('tasks: the WHY of a SUBMITTED task whose last attempt got HTTP 503', () => {
    const task = { id: 't1', state: 'SUBMITTED', turn: 1, stateReason: 'task stored; dispatch pending' } as TaskRow;
    const turn = { dispatchId: 'msg_1', createdAt: NOW - 9000, nextAttemptAt: Date.parse('2026-06-01T12:00:10.900Z') } as TurnRow;
    const last = { attempt: 2, outcome: 'retry', httpStatus: 503, error: 'HTTP 503', startedAt: NOW - 2000 } as AttemptRow;
    const reads = { turns: { get: () => turn }, ledger: { refusedRepliesOf: () => undefined }, attempts: { last: () => last } } as unknown as StoreReads;
    expect(whyText(reads, task)).toBe('webhook attempt 2 failed (HTTP 503); next attempt 2026-06-01T12:00:10Z');
  });
});

/**
 * `retry` printed "first attempt retry (HTTP 500)": the outcome kind was written as is (fresh-user
 * trial). Every kind reads as the predicate of a sentence about the attempt.
 */
describe('an attempt result reads right for every outcome kind', () => {
  it('accepted, retry, failed, gone', () => {
    expect(attemptResultText({ outcome: 'accepted', httpStatus: 202, error: null })).toBe('was accepted (HTTP 202)');
    expect(attemptResultText({ outcome: 'retry', httpStatus: 500, error: 'HTTP 500' })).toBe('failed (HTTP 500)');
    expect(attemptResultText({ outcome: 'retry', httpStatus: null, error: 'timed out after 10000 ms' })).toBe('failed: timed out after 10000 ms');
    expect(attemptResultText({ outcome: 'failed', httpStatus: 404, error: 'HTTP 404' })).toBe('was refused (HTTP 404)');
    expect(attemptResultText({ outcome: 'gone', httpStatus: 410, error: 'HTTP 410' })).toBe('found the webhook gone (HTTP 410)');
    expect(`first attempt ${attemptResultText({ outcome: 'retry', httpStatus: 500, error: 'HTTP 500' })}`).toBe('first attempt failed (HTTP 500)');
    expect(attemptOutcome({ attempt: 3, outcome: 'failed', httpStatus: 403, error: 'HTTP 403' })).toBe('attempt 3 was refused (HTTP 403)');
    expect(attemptOutcome({ attempt: 1, outcome: 'gone', httpStatus: 410, error: 'HTTP 410' })).toBe('attempt 1 found the webhook gone (HTTP 410)');
  });
});

/** `cancel`'s notice line names the attempt's outcome as a sentence too: it said "NOT accepted: gone (HTTP 410)" (the raw kind). */
describe("cancel's notice line says what the attempt did", () => {
  const agent = { name: 'grok' } as AgentConfig;
  const taskId = '4c71c3d6-a1f9-484e-a69d-0966e402e2bb';
  it('cancel: it failed / was refused / found the webhook gone, with the status once', () => {
    const line = (outcome: DeliveryResult['outcome'], httpStatus: number | null, error: string | null): string => noticeLine(agent, taskId, { outcome, httpStatus, error, retryAfterMs: null });
    expect(line('retry', 503, 'HTTP 503')).toContain('NOT accepted: it failed (HTTP 503); it is not tried again');
    expect(line('failed', 404, 'HTTP 404')).toContain('NOT accepted: it was refused (HTTP 404); it is not tried again');
    expect(line('gone', 410, 'HTTP 410')).toContain('NOT accepted: it found the webhook gone (HTTP 410); it is not tried again');
    expect(line('retry', null, 'network error: ECONNREFUSED')).toContain('NOT accepted: it failed: network error: ECONNREFUSED; it is not tried again');
    expect(line('accepted', 202, 'HTTP 202')).toContain('accepted (HTTP 202)');
  });
});
