import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { storeFingerprint } from '../../../src/core/store-fingerprint.js';

/**
 * Tester's report: /health (no auth) named the store by an unkeyed SHA-256 of its path, and an
 * offline dictionary of likely paths found `/work/trial2/cfg/state/mailbridge.sqlite`.
 */
describe('the store fingerprint', () => {
  const path = '/work/trial2/cfg/state/mailbridge.sqlite';

  it('is keyed with server.bearer: the same path under two bearers gives two fingerprints', () => {
    const a = storeFingerprint(path, 'bearer-a');
    expect(a).toMatch(/^[0-9a-f]{16}$/);
    expect(storeFingerprint(path, 'bearer-a')).toBe(a);
    expect(storeFingerprint(path, 'bearer-b')).not.toBe(a);
    expect(storeFingerprint('/work/trial2/cfg/state/other.sqlite', 'bearer-a')).not.toBe(a);
  });

  it('cannot be matched by a dictionary of unkeyed hashes of likely paths', () => {
    const guesses = [path, '/home/alice/.config/a2a-mailbridge/state/mailbridge.sqlite'];
    const dictionary = new Set(guesses.flatMap((g) => [createHash('sha256').update(`a2a-mailbridge store\n${g}`).digest('hex').slice(0, 16), createHash('sha256').update(g).digest('hex').slice(0, 16)]));
    expect(dictionary.has(storeFingerprint(path, 'a-secret-bearer'))).toBe(false);
  });
});
