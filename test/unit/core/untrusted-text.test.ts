import { describe, expect, it } from 'vitest';
import { capText, safeText } from '../../../src/core/untrusted-text.js';

describe('safeText', () => {
  it('removes ANSI escapes, NUL and other controls, keeps tabs and line breaks', () => {
    expect(safeText('ok\u001b[2J\u001b]0;pwned\u0007\u0000 done\r\n\tnext\u0085')).toBe('ok[2J]0;pwned done\n\tnext');
    expect(safeText('héllo — 世界')).toBe('héllo — 世界');
  });
  it('caps long inline text and says where the rest is', () => {
    expect(capText('abcdef', 4, 'the history')).toBe('abcd\n… (2 more characters; the whole text is in the history)');
    expect(capText('abc', 4, 'x')).toBe('abc');
  });
});
