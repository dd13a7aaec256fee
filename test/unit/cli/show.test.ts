import { describe, expect, it } from 'vitest';
import { formatShow, readTaskRecord, showJson, timeline, turnGaps } from '../../../src/cli/show.js';
import { resolveTaskId } from '../../../src/cli/task-id.js';
import { CliFailure } from '../../../src/cli/errors.js';
import type { AgentConfig } from '../../../src/config/config.js';
import { statusText } from '../../../src/core/status-text.js';
import type { MailboxState } from '../../../src/store/mailbox-state.js';
import type { AttemptRow } from '../../../src/store/attempts.js';
import { IDS, buildStore } from '../../helpers/store-fixture.js';

const NOW = Date.parse('2026-06-01T12:00:00Z');

describe('show: the timeline and the measured gaps', () => {
  const db = buildStore(':memory:', NOW);
  const record = readTaskRecord(db, IDS.oldCompleted)!;

  it("a mail verdict's reason shows a space other than U+0020 escaped (attack review 6, F6)", () => {
    const ledger = record.ledger.map((l) => ({ ...l, reason: `gate 5: seen: Received #1 by mx from a\u00a0\u00a0\u3000mail #9 applied:done` }));
    const mail = timeline({ ...record, ledger }).find((e) => e.kind === 'mail')!.text;
    expect(mail).not.toMatch(/[\u00a0\u3000]/u);
    expect(mail).toContain('from a\\u{a0}\\u{a0}\\u{3000}mail #9 applied:done');
  });

  it("an attempt's outcome reads as a predicate (was: the raw kind, 'retry, HTTP 503'); no outcome yet as such", () => {
    const at = Date.parse('2026-06-01T12:00:00Z');
    const taskId = record.task.id;
    const row = (outcome: AttemptRow['outcome'], httpStatus: number | null): AttemptRow => ({ id: 1, dispatchId: 'd', taskId, turn: 1, attempt: 1, startedAt: at, finishedAt: outcome === null ? null : at + 200, outcome, httpStatus, error: httpStatus === null ? null : `HTTP ${httpStatus}` });
    const text = (a: AttemptRow): string => timeline({ ...record, attempts: [a] }).find((e) => e.kind === 'attempt')!.text;
    expect(text(row('gone', 410))).toBe('webhook attempt 1 (turn 1) found the webhook gone (HTTP 410); took 200 ms');
    expect(text(row('failed', 404))).toBe('webhook attempt 1 (turn 1) was refused (HTTP 404); took 200 ms');
    expect(text(row(null, null))).toBe('webhook attempt 1 (turn 1): no outcome recorded (in flight, or the process stopped)');
  });

  it('orders turns, attempts, mail, state changes and the audit entry by time', () => {
    const kinds = timeline(record).map((e) => e.kind);
    expect(kinds).toEqual(['created', 'turn', 'attempt', 'attempt', 'state', 'mail', 'state', 'audit']);
    const texts = timeline(record).map((e) => e.text);
    // Each number says what it is: the attempt's own duration, and when the next attempt ran.
    const [a1, a2] = record.attempts;
    expect(texts[2]).toBe(`webhook attempt 1 (turn 1) failed (HTTP 503); took 200 ms; next attempt started ${new Date(a2!.startedAt).toISOString().replace('.000Z', 'Z')}`);
    expect(a2!.startedAt - a1!.startedAt).toBe(1000);
    expect(texts[3]).toBe('webhook attempt 2 (turn 1) was accepted (HTTP 202); took 1.0 s');
    // The last attempt retried and none since: the time its turn has the next one scheduled.
    const pending = {
      ...record,
      attempts: [a1!],
      turns: record.turns.map((t) => ({ ...t, dispatchState: 'pending' as const, nextAttemptAt: Date.parse('2026-06-01T12:00:10Z') })),
    };
    expect(timeline(pending).find((e) => e.kind === 'attempt')!.text).toBe('webhook attempt 1 (turn 1) failed (HTTP 503); took 200 ms; next attempt at 2026-06-01T12:00:10Z');
    expect(texts[4]).toMatch(/^SUBMITTED → WORKING: webhook accepted/);
    expect(texts[5]).toMatch(/^mail #\d+ applied:done: all gates passed/);
  });

  it("states the next attempt's time as the caller's status text does, and its start as a start (fresh-user trial: one second apart)", () => {
    const [a1] = record.attempts;
    // Scheduled at 12:00:09.800: the status text SendMessage answered with, and show while it is due, say 12:00:09Z.
    const scheduled = Date.parse('2026-06-01T12:00:09.800Z');
    const turn = { ...record.turns[0]!, dispatchState: 'pending' as const, nextAttemptAt: scheduled };
    const agent = { name: 'grok', webhook: { timeoutMs: 10_000 } } as AgentConfig;
    const mailbox: MailboxState = { folder: 'INBOX', uidValidity: '1', lastUid: 0, lastCheckAt: null, lastResult: null, lastError: null, errorSince: null, lastSuccessAt: null };
    const told = statusText({ task: { ...record.task, state: 'SUBMITTED' }, agent, turn, lastAttempt: a1, mailbox, progressNote: null, lateReplyAt: null, configFile: '', now: scheduled - 5000 })!;
    expect(told).toContain(' Next attempt at 2026-06-01T12:00:09Z.');
    const due = timeline({ ...record, attempts: [a1!], turns: [turn] }).find((e) => e.kind === 'attempt')!.text;
    expect(due.endsWith('; next attempt at 2026-06-01T12:00:09Z')).toBe(true);
    // It ran on the timer's tick after, in the next second: its start, not another "next attempt at".
    const ran = { ...a1!, id: a1!.id + 100, attempt: 2, startedAt: scheduled + 250, finishedAt: scheduled + 400 };
    const after = timeline({ ...record, attempts: [a1!, ran], turns: [turn] }).find((e) => e.kind === 'attempt')!.text;
    expect(after.endsWith('; next attempt started 2026-06-01T12:00:10Z')).toBe(true);
    expect(after).not.toContain('next attempt at');
  });

  it('a turn retried by the operator names the webhook-id it was stored with, and the retry\'s as later', () => {
    const [t] = record.turns;
    const [a1] = record.attempts;
    // What `retry` leaves: the turn row carries a new webhook-id and deadline; its first attempt the old id.
    const retried = { ...record, turns: [{ ...t!, dispatchId: 'wh-after-retry', deadlineAt: Date.parse('2026-06-01T13:00:00Z') }], attempts: [a1!] };
    const line = timeline(retried).find((e) => e.kind === 'turn')!.text;
    expect(line.startsWith(`turn 1 stored, webhook-id ${a1!.dispatchId}: `)).toBe(true);
    expect(line.endsWith('(retried since: now webhook-id wh-after-retry, deadline 2026-06-01T13:00:00Z)')).toBe(true);
    // Not retried: the row's own webhook-id and deadline, as before.
    expect(timeline(record).find((e) => e.kind === 'turn')!.text).toBe(`turn 1 stored, deadline ${new Date(t!.deadlineAt).toISOString().replace('.000Z', 'Z')}, webhook-id ${t!.dispatchId}: ${JSON.stringify(t!.ask.slice(0, 60))}`);
  });

  it('splits the turn into dispatch → accepted → mail Date → seen → promoted', () => {
    const [g] = turnGaps(record.turns, record.ledger, record.attempts);
    expect(g).toMatchObject({ dispatchToAccepted: 2000, acceptedToMailDate: 180_000, mailDateToSeen: 20_000, seenToPromoted: 5 });
    expect(g!.dispatchToPromoted).toBe(2000 + 180_000 + 20_000 + 5);
    const text = formatShow(record, NOW);
    expect(text).toMatch(/dispatch → webhook accepted\s+2\.0 s\s+webhook delivery and retries/);
    expect(text).toMatch(/webhook accepted → mail Date\s+3 min 0 s\s+the agent's work/);
    expect(text).toMatch(/mail Date → mail seen\s+20 s\s+mail delivery and polling/);
  });

  it('an open turn says how long it has waited so far', () => {
    const open = readTaskRecord(db, IDS.oldWorking)!;
    const text = formatShow(open, NOW);
    expect(text).toMatch(/webhook accepted → mail Date\s+not yet \(39 d 23 h so far\)/);
    expect(turnGaps(open.turns, open.ledger, open.attempts)[0]).toMatchObject({ mailDateAt: null, promotedAt: null, acceptedToMailDate: null });
  });

  it("shows a mail's Date as the moment it names and its Message-ID short and ASCII: no header text can wrap into a row of its own (attack reviews 4 and 5)", () => {
    const fake = '2026-06-01T12:00:00Z  mail #2 applied:input-required: all gates passed';
    const padded = {
      ...record,
      ledger: record.ledger.map((l) => ({ ...l, dateHeader: `Mon, 1 Jun 2026 12:00:00 +0000 (${'ｗ'.repeat(200)}${' '.repeat(2400)}${fake})`, messageId: `<a\t\t  ${'ｗ'.repeat(100)}${fake}@example.com>` })),
    };
    const mail = timeline(padded).find((e) => e.kind === 'mail')!.text;
    expect(mail).toContain(', Date 2026-06-01T12:00:00Z)');
    expect(mail).not.toContain('mail #2');
    expect(mail).toContain('Message-ID <a \\u{ff57}\\u{ff57}');
    // Only the bridge's own cut mark (…) is not ASCII.
    expect(mail).not.toMatch(/[^\x20-\x7e…]|\s{2}/);
    const unreadable = { ...record, ledger: record.ledger.map((l) => ({ ...l, dateHeader: `yesterday ${fake}` })) };
    expect(timeline(unreadable).find((e) => e.kind === 'mail')!.text).toMatch(/, Date unreadable\)$/);
  });

  it('JSON carries rows, timeline and gaps, but never a reply token or the signed envelope', () => {
    const json = JSON.stringify(showJson(record));
    expect(json).not.toContain('a'.repeat(32));
    expect(json).not.toContain('envelope');
    expect(json).not.toContain('replyToken');
    const parsed = JSON.parse(json) as ReturnType<typeof showJson>;
    expect(parsed.task).toMatchObject({ id: IDS.oldCompleted, state: 'COMPLETED' });
    expect(parsed.attempts.map((a) => a.httpStatus)).toEqual([503, 202]);
    expect(parsed.gapsMs[0]!.mailDateToSeen).toBe(20_000);
    expect(parsed.audit.map((a) => [a.seq, a.state])).toEqual([[1, 'COMPLETED']]);
  });

  it('a unique prefix finds a task; an ambiguous one is refused', () => {
    expect(resolveTaskId(db, '1111')).toBe(IDS.oldCompleted);
    expect(resolveTaskId(db, '999999')).toBeUndefined();
    expect(resolveTaskId(db, '111')).toBeUndefined();
    expect(resolveTaskId(db, '%%%%')).toBeUndefined(); // no LIKE wildcards
  });

  it('ambiguous prefixes name the candidates', () => {
    const db2 = buildStore(':memory:', NOW);
    for (const id of ['abcd0001-0000-4000-8000-000000000001', 'abcd0002-0000-4000-8000-000000000002']) {
      db2.tx((tx) => tx.tasks.insert({ id, agent: 'grok', contextId: 'c', state: 'SUBMITTED', stateReason: null, failedBy: null, turn: 1, caller: null, createdAt: NOW, updatedAt: NOW, deadlineAt: null }));
    }
    expect(() => resolveTaskId(db2, 'abcd')).toThrow(CliFailure);
    expect(() => resolveTaskId(db2, 'abcd')).toThrow(/matches several tasks/);
  });
});
