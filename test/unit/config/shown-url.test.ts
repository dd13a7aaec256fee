import { describe, expect, it } from 'vitest';
import { shownUrl } from '../../../src/config/shown-url.js';

describe('shownUrl', () => {
  it('redacts the query string and the fragment, keeps origin and path', () => {
    expect(shownUrl(new URL('https://hook.example/x?key=SECRET'))).toBe('https://hook.example/x?<redacted>');
    expect(shownUrl('https://hook.example/x?key=SECRET#frag')).toBe('https://hook.example/x?<redacted>#<redacted>');
    expect(shownUrl('https://hook.example/x')).toBe('https://hook.example/x');
    expect(shownUrl('https://hook.example:8443/a/b?')).toBe('https://hook.example:8443/a/b');
    expect(shownUrl('not a url?key=SECRET')).toBe('not a url?<redacted>');
  });
});
