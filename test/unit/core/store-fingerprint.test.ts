import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

  it('names a store whose folder was moved away as the bridge named it, under a symlinked folder too', () => {
    const root = mkdtempSync(join(tmpdir(), 'mb-fp-'));
    try {
      mkdirSync(join(root, 'real'));
      symlinkSync(join(root, 'real'), join(root, 'link'));
      const store = join(root, 'link', 'cfg', 'state', 'bridge.sqlite');
      mkdirSync(join(root, 'real', 'cfg', 'state'), { recursive: true });
      writeFileSync(store, '');
      // What serve computes at its start, the file in place.
      const atStart = storeFingerprint(store, 'b');
      renameSync(join(root, 'real', 'cfg', 'state'), join(root, 'real', 'cfg', 'state.moved'));
      expect(storeFingerprint(store, 'b')).toBe(atStart);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
