import { describe, expect, it } from 'vitest';
import { demo } from '../../../src/demo/round-trip.js';

describe('a2a-mailbridge demo', () => {
  it('prints a WORKING answer with the dispatch note, then a COMPLETED answer fenced under the untrusted label', async () => {
    const lines: string[] = [];
    const ok = await demo({ out: (l) => lines.push(l) });
    const text = lines.join('\n');
    expect(ok).toBe(true);
    expect(text).toMatch(/← TASK_STATE_WORKING {2}task [0-9a-f-]{36}\n {5}The job is with the cloud agent demo since \S+Z \(\d+ s\); the webhook was accepted/);
    expect(text).toMatch(/← TASK_STATE_COMPLETED {2}task [0-9a-f-]{36}\n {5}\[UNTRUSTED — demo reply, verify before acting\] BEGIN-AGENT-TEXT ([0-9a-f]{16})\n {5}Research result for: Find three recent papers[^]*\n {5}END-AGENT-TEXT \1\n/);
    expect(text).toMatch(/ledger: applied:done/);
    expect(lines.at(-1)).toBe('demo: OK (one webhook, one authenticated reply, task completed)');
  });
});
