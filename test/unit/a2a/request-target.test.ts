import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { pathOf, targetAuthority } from '../../../src/a2a/request-target.js';

/** What the server read the path with before: the WHATWG URL parser (which refuses some targets, e.g. `//`). */
const outcome = (read: () => string): string => {
  try {
    return read();
  } catch (err) {
    return `throws ${(err as { code?: string }).code}`;
  }
};
const urlPath = (target: string): string => outcome(() => new URL(target || '/', 'http://127.0.0.1').pathname);
const fastPath = (target: string): string => outcome(() => pathOf(target) ?? 'throws ERR_INVALID_URL');

describe('pathOf (the request path without a URL per call)', () => {
  it.each([
    '/agents/grok',
    '/agents/grok/',
    '/.well-known/agent-card.json',
    '/agents/grok/.well-known/agent.json',
    '/agents/grok?A2A-Version=1.0',
    '/agents/grok/tasks/abc:cancel',
    '//evil.example/agents/grok',
    '/agents/../health',
    '/agents/./grok',
    '/agents/%2e%2e/health',
    '/agents/.%2E/health',
    '/agents/gr%6fk',
    '/agents/gr ok',
    '/agents\\grok',
    '/a//b',
    '/a#frag',
    '/..',
    '//',
    '*',
    '',
    '?x=1',
    'http://[::1/x',
    'http://evil.example/health',
    'http://127.0.0.1:99999/',
  ])('%j reads as new URL reads it', (target) => {
    expect(fastPath(target)).toBe(urlPath(target));
  });

  it('agrees with new URL on any target drawn from path characters, dots, slashes and escapes', () => {
    const piece = fc.constantFrom('/', '.', '..', 'a', 'grok', '%2e', '%2E', '%', '~', '-', '_', '?', '#', ' ', '\\', ':', '@', 'é', '%41', '//');
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), (pieces) => {
        const target = `/${pieces.join('')}`;
        expect(fastPath(target)).toBe(urlPath(target));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('targetAuthority (RFC 9112 §3.2.2: an absolute-form target names the host)', () => {
  it.each([
    ['/agents/grok', null],
    ['*', null],
    ['http://evil.example/agents/grok', 'evil.example'],
    ['HTTP://Evil.Example:8080/health', 'evil.example:8080'],
    ['http://127.0.0.1:8765/agents/grok', '127.0.0.1:8765'],
    ['http://[::1]/health', '[::1]'],
  ])('%j → %j', (target, host) => {
    expect(targetAuthority(target)).toBe(host);
  });
});
