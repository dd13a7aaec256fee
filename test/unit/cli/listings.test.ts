import { describe, expect, it } from 'vitest';
import { formatLedger, ledgerJson } from '../../../src/cli/ledger.js';
import { formatTasks, taskJson, whyText } from '../../../src/cli/tasks.js';
import { formatPrune } from '../../../src/cli/prune.js';
import { IDS, RAW_FORGED, buildStore } from '../../helpers/store-fixture.js';

const NOW = Date.parse('2026-06-01T12:00:00Z');
const db = buildStore(':memory:', NOW);

describe('tasks and ledger listings', () => {
  it('tasks: newest status first, aligned, with whole ids to paste into show', () => {
    const rows = db.tasks.rows({ limit: 10 });
    expect(rows.map((r) => r.id)).toEqual([IDS.inputRequired, IDS.recentFailed, IDS.oldWorking, IDS.oldCompleted, IDS.oldCanceled]);
    const lines = formatTasks(rows).split('\n');
    expect(lines[0]).toMatch(/^UPDATED \(UTC\)\s+STATE\s+AGENT\s+TURN\s+TASK\s+CONTEXT\s+WHY$/);
    expect(lines[1]).toMatch(new RegExp(`^2026-06-01T11:00:00Z  INPUT_REQUIRED  grok\\s+1\\s+${IDS.inputRequired}  ctx-shared\\s+the agent asked for input$`));
    expect(formatTasks([])).toBe('no tasks match');
    expect(taskJson(rows[0]!)).toMatchObject({ id: IDS.inputRequired, updatedAt: '2026-06-01T11:00:00.000Z', createdAt: '2026-06-01T10:00:00.000Z' });
  });

  it('tasks WHY: an open task names the replies the gates refused in this turn; a finished one its cause', () => {
    const rows = db.tasks.rows({ limit: 10 });
    const why = (id: string) => whyText(db, rows.find((r) => r.id === id)!);
    expect(why(IDS.oldWorking)).toBe('1 reply refused (last: auth:dkim-unaligned); webhook accepted (HTTP 202) on attempt 1');
    expect(why(IDS.inputRequired)).toBe('the agent asked for input');
    // FAILED: the forgery tagged with it is no longer news to the operator of an open task.
    expect(why(IDS.recentFailed)).toBe('deadline passed with no reply from claude');
    expect(formatTasks(rows, (t) => whyText(db, t))).toContain('1 reply refused (last: auth:dkim-unaligned)');
  });

  it('ledger: hostile header text is inert, raw bytes never appear', () => {
    const rows = db.ledger.query({ verdict: 'auth:', limit: 10 });
    expect(rows.map((r) => r.verdict)).toEqual(['auth:from-mismatch', 'auth:dkim-unaligned']);
    const text = formatLedger(rows);
    expect(text).not.toContain('\x1b');
    expect(text).toContain('\\u{1b}[31m');
    const json = JSON.stringify(rows.map(ledgerJson));
    expect(json).not.toContain('forged\\r\\n');
    expect(json).not.toContain(RAW_FORGED.toString('base64').slice(0, 20));
    expect(rows.map(ledgerJson)[0]).not.toHaveProperty('raw');
  });

  it('ledger REASON: a long reason keeps its start and the end that explains the refusal; --wide prints it whole, escaped', () => {
    // Gate 7's words for a mail written into the folder by hand with a provider stamp copied in (README, Troubleshooting).
    const why = 'the message holds no DKIM-Signature with d=agent.example';
    const reason = `gate 7: no trusted dkim=pass with header.d=agent.example matching a DKIM-Signature (trusted: dkim=pass header.d=agent.example; ${why})`;
    const row = { ...db.ledger.query({ verdict: 'auth:dkim-unaligned', limit: 1 })[0]!, reason };
    const cell = (text: string): string => text.split('\n')[1]!.split('  ').at(-1)!;
    const cut = cell(formatLedger([row]));
    expect(cut.startsWith('gate 7: no trusted dkim=pass')).toBe(true);
    expect(cut.endsWith(`${why})`)).toBe(true);
    expect(cut).toContain(' … ');
    expect(cell(formatLedger([row], { wide: true }))).toBe(reason);
    // Either way, what the mail put into the reason stays inert.
    const hostile = { ...row, reason: `gate 4: From is \x1b[2J${'x'.repeat(300)}@evil.example, not agent@agent.example` };
    for (const text of [formatLedger([hostile]), formatLedger([hostile], { wide: true })]) {
      expect(text).not.toContain('\x1b');
      expect(text).toContain('not agent@agent.example');
    }
    expect(formatLedger([hostile], { wide: true })).toContain('\\u{1b}[2J');
  });

  it('ledger: a space other than U+0020 in From, Subject or the reason is escaped, so it cannot pass for the table spacing (attack review 6, F6)', () => {
    const row = { ...db.ledger.query({ verdict: 'auth:', limit: 1 })[0]!, subject: `hi\u00a0\u00a0\u00a0auth:x`, reason: `gate 5: seen: Received #1 by mx from a\u2003\u2003applied:done\u205f` };
    for (const text of [formatLedger([row]), formatLedger([row], { wide: true })]) {
      expect(text).not.toMatch(/[\u00a0\u2003\u205f]/u);
      expect(text).toContain('a\\u{2003}\\u{2003}applied:done\\u{205f}');
      expect(text).toContain('hi\\u{a0}\\u{a0}\\u{a0}auth:x');
    }
  });

  it('ledger --wide: one forged Subject of 20,000 characters runs on in its own row and pads no other row to its width', () => {
    const [a, b] = db.ledger.query({ verdict: 'auth:', limit: 2 });
    const huge = { ...a!, subject: `[grok:${'x'.repeat(20_000)}]` };
    const lines = formatLedger([huge, b!], { wide: true }).split('\n');
    expect(lines[1]).toContain('x'.repeat(20_000)); // whole, as --wide promises
    for (const i of [0, 2]) expect([...lines[i]!].length, `line ${i}`).toBeLessThan(600);
    // The rows of ordinary width still line up: REASON starts at the same column in the header and the short row.
    expect(lines[2]!.indexOf(b!.reason.slice(0, 10))).toBe(lines[0]!.indexOf('REASON'));
  });

  it('prune: one line of counts, saying what stays', () => {
    expect(formatPrune({ tasks: 2, turns: 2, attempts: 2, messages: 2, artifacts: 1, replies: 2, attachments: 0, events: 5, ledger: 2, ledgerThinned: 0 }, NOW, true)).toBe(
      'would delete 2 tasks, 2 turns, 2 dispatch attempts, 2 messages, 1 artifact, 2 replies, 0 attachments, 5 task events, 2 ledger rows (tasks finished and mail seen before 2026-06-01T12:00:00Z; open tasks and audit entries are kept)',
    );
    // Rows of Maildir files still there are kept thin, and said apart.
    expect(formatPrune({ tasks: 1, turns: 1, attempts: 1, messages: 1, artifacts: 0, replies: 1, attachments: 0, events: 2, ledger: 0, ledgerThinned: 1 }, NOW, false)).toBe(
      'deleted 1 task, 1 turn, 1 dispatch attempt, 1 message, 0 artifacts, 1 reply, 0 attachments, 2 task events, 0 ledger rows (tasks finished and mail seen before 2026-06-01T12:00:00Z; open tasks and audit entries are kept); kept 1 ledger row thin: the verdict of each Maildir file still there',
    );
  });
});
