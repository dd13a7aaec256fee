import { describe, expect, it } from 'vitest';
import type { AgentConfig } from '../../../src/config/config.js';
import { statusText, type StatusFacts } from '../../../src/core/status-text.js';
import type { MailboxState } from '../../../src/store/mailbox-state.js';
import type { TaskRow } from '../../../src/store/task-rows.js';

const NOW = Date.parse('2026-06-01T12:00:00Z');
const id = '5f92b50d-e4ec-41ba-823f-7e7281c53eee';
const agent = { name: 'grok', untrustedLabel: '[UNTRUSTED]' } as AgentConfig;
const mailbox: MailboxState = { folder: 'INBOX', uidValidity: '1', lastUid: 0, lastCheckAt: NOW - 10_000, lastResult: 'ok, 0 new messages, 0 applied', lastError: null, errorSince: null, lastSuccessAt: NOW - 10_000 };
const task = (o: Partial<TaskRow> = {}): TaskRow => ({ id, agent: 'grok', contextId: 'ctx-1', state: 'WORKING', stateReason: 'webhook accepted', failedBy: null, turn: 1, caller: null, createdAt: NOW - 60_000, updatedAt: NOW - 60_000, deadlineAt: NOW + 3_600_000, ...o });
const facts = (o: Partial<StatusFacts> = {}): StatusFacts => ({ task: task(), agent, turn: undefined, lastAttempt: undefined, mailbox, progressNote: null, lateReplyAt: null, now: NOW, ...o });

describe('status text', () => {
  it('WORKING says when the next check is due, that the next call checks, or that the mailbox is watched', () => {
    expect(statusText(facts({ checkIntervalMs: 15_000 }))).toContain(
      'Mailbox last checked 2026-06-01T11:59:50Z (10 s ago: ok, 0 new messages, 0 applied). The next check is due at 2026-06-01T12:00:05Z (in 5 s); a call before then answers from what is already known.',
    );
    expect(statusText(facts({ checkIntervalMs: 5_000 }))).toContain('(10 s ago: ok, 0 new messages, 0 applied). The next call checks it again.');
    expect(statusText(facts({ checkIntervalMs: 15_000, watch: true }))).toContain('The mailbox is watched: a reply is applied as it lands.');
    expect(statusText(facts({ checkIntervalMs: 15_000, mailbox: { ...mailbox, lastCheckAt: null } }))).toContain('The mailbox has not been checked yet; the next call checks it.');
  });

  it('names refused replies by count, verdict and time, and the operator command; FAILED by deadline too', () => {
    const one = { count: 1, lastVerdict: 'auth:dkim-unaligned' as const, lastSeenAt: NOW - 5000, lastLedgerId: 7 };
    expect(statusText(facts({ refused: one }))).toContain(
      `A reply for this task was refused by the bridge's authentication gates (verdict auth:dkim-unaligned, seen 2026-06-01T11:59:55Z); it was not applied and the task still waits for the agent. The bridge's operator can see why with: a2a-mailbridge ledger --task ${id}`,
    );
    const many = statusText(facts({ refused: { ...one, count: 3, lastVerdict: 'bad-token' } }))!;
    expect(many).toContain("3 replies for this task were refused by the bridge's authentication gates (the last: verdict bad-token, seen");
    expect(statusText(facts({ refused: { ...one, count: 1000 } }))).toContain('1000 replies or more for this task were refused');
    const failed = statusText(facts({ task: task({ state: 'FAILED', failedBy: 'deadline', stateReason: 'deadline passed with no reply from grok' }), refused: one }))!;
    expect(failed).toMatch(/^Failed: deadline passed with no reply from grok\. A reply for this task was refused .*; it was not applied\. The bridge's operator can see why with: a2a-mailbridge ledger --task /);
  });
});
