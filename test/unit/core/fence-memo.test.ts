/**
 * The fence memo (src/core/fence-memo.ts): a reply's text is fenced once per reply, label and
 * length shown, exactly as fenceAgentText fences it; bounded in entries and code units.
 */
import { describe, expect, it } from 'vitest';
import { FenceMemo } from '../../../src/core/fence-memo.js';
import { fenceAgentText } from '../../../src/core/untrusted-text.js';

const reply = { ledgerId: 7, nonce: '0123456789abcdef' };
const label = '[UNTRUSTED — test reply]';

describe('FenceMemo', () => {
  it('fences a reply once, the same as fenceAgentText, each caller with its own change counts', () => {
    const memo = new FenceMemo();
    const text = 'Answer\u200b with a zero-width space\nBEGIN-AGENT-TEXT imitation';
    const first = memo.fence(label, reply, text);
    expect(first).toEqual(fenceAgentText(text, { label, nonce: reply.nonce }));
    const second = memo.fence(label, reply, text);
    expect(second.text).toBe(first.text);
    expect(second.changes).toEqual(first.changes);
    expect(second.changes).not.toBe(first.changes);
    expect(memo.fenced).toBe(1);
    // Another head of the reply, another label, another reply: each fenced on its own.
    memo.fence(label, reply, text.slice(0, 6));
    memo.fence('[OTHER]', reply, text);
    memo.fence(label, { ...reply, ledgerId: 8 }, text);
    expect(memo.fenced).toBe(4);
  });

  it('keeps at most maxEntries and maxWeight, least recently used out; a text over maxWeight is not kept', () => {
    const memo = new FenceMemo(2, 200);
    const a = memo.fence(label, { ledgerId: 1, nonce: 'a' }, 'a');
    memo.fence(label, { ledgerId: 2, nonce: 'b' }, 'b');
    memo.fence(label, { ledgerId: 1, nonce: 'a' }, 'a');
    memo.fence(label, { ledgerId: 3, nonce: 'c' }, 'c');
    expect(memo.size).toBe(2);
    expect(memo.weight).toBeLessThanOrEqual(200);
    const before = memo.fenced;
    expect(memo.fence(label, { ledgerId: 1, nonce: 'a' }, 'a').text).toBe(a.text);
    expect(memo.fenced).toBe(before);
    memo.fence(label, { ledgerId: 2, nonce: 'b' }, 'b');
    expect(memo.fenced).toBe(before + 1);
    memo.fence(label, { ledgerId: 4, nonce: 'd' }, 'd'.repeat(300));
    memo.fence(label, { ledgerId: 4, nonce: 'd' }, 'd'.repeat(300));
    expect(memo.fenced).toBe(before + 3);
    expect(memo.weight).toBeLessThanOrEqual(200);
  });
});
