import { describe, expect, it } from 'vitest';
import { formatPrune } from '../../src/cli/prune.js';
import { plural } from '../../src/plural.js';

describe('plural ("1 tasks")', () => {
  it('the singular for exactly one, the plural otherwise, an irregular plural when given', () => {
    expect([plural(0, 'task'), plural(1, 'task'), plural(2, 'task')]).toEqual(['0 tasks', '1 task', '2 tasks']);
    expect(plural(1, 'entry', 'entries')).toBe('1 entry');
    expect(plural(3, 'entry', 'entries')).toBe('3 entries');
  });

  it('prune says "1 task", "1 ledger row", never "1 tasks"', () => {
    const line = formatPrune({ tasks: 1, turns: 1, attempts: 1, messages: 1, artifacts: 0, replies: 1, attachments: 2, events: 1, ledger: 1, ledgerThinned: 0 }, Date.UTC(2026, 5, 1), false);
    expect(line).toMatch(/^deleted 1 task, 1 turn, 1 dispatch attempt, 1 message, 0 artifacts, 1 reply, 2 attachments, 1 task event, 1 ledger row \(/);
  });
});
