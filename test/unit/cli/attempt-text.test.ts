import { describe, expect, it } from 'vitest';
import { attemptDetail } from '../../../src/cli/attempt-text.js';
import { formatStatus, type StatusReport } from '../../../src/cli/status.js';

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
    expect(text).toContain('task 11111111 (grok) attempt 2 failed (HTTP 503); next 2026-06-01T12:00:10Z: ');
    expect(text).toContain('task 22222222 (grok) attempt 1 failed: network error: ECONNREFUSED: ');
    expect(text).not.toMatch(/HTTP 503\): HTTP 503/);
  });
});
