/**
 * The code cache file (src/cli/code-cache-file.ts): V8's bytes come back only for the bundle file
 * named in the header and only whole; whatever else lies at the path reads as no cache, and a
 * failed write leaves nothing behind.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CACHE_MAX_BYTES, readCodeCache, writeCodeCache } from '../../../src/cli/code-cache-file.js';

let dir: string;
let path: string;
const ID = '64769:123:696421:1796199482206457015:1796199482206457015';
const data = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 31) % 256));

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'mb-code-cache-'));
  path = join(dir, 'v26', 'a2a-mailbridge-bundle.v8cache');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('code cache file', () => {
  it('gives back the bytes written for the same bundle file, from a private file', () => {
    expect(writeCodeCache(path, ID, data)).toBe(true);
    expect(readCodeCache(path, ID)?.equals(data)).toBe(true);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(join(dir, 'v26'))).toEqual(['a2a-mailbridge-bundle.v8cache']);
  });

  it('gives nothing for another bundle file (V8 would compare the lengths only)', () => {
    writeCodeCache(path, ID, data);
    expect(readCodeCache(path, ID.replace(':123:', ':124:'))).toBeUndefined();
  });

  it('gives nothing for damaged bytes: a torn tail, one byte changed, a file cut short, a header of another format', () => {
    writeCodeCache(path, ID, data);
    const whole = readFileSync(path);
    const torn = Buffer.from(whole);
    torn.fill(0, whole.length - 512);
    const flipped = Buffer.from(whole);
    flipped[whole.length - 100] = flipped[whole.length - 100]! ^ 0x01;
    for (const bytes of [torn, flipped, whole.subarray(0, whole.length - 1), whole.subarray(0, 40), Buffer.from(whole.toString('latin1').replace('code cache 2', 'code cache 1'), 'latin1'), Buffer.alloc(0)]) {
      writeFileSync(path, bytes);
      expect(readCodeCache(path, ID)).toBeUndefined();
    }
  });

  it('reads nothing through a symlink, from a FIFO (without blocking), a folder, or a file over the cap', () => {
    mkdirSync(join(dir, 'v26'));
    const real = join(dir, 'real');
    writeCodeCache(real, ID, data);
    symlinkSync(real, path);
    expect(readCodeCache(path, ID)).toBeUndefined();
    rmSync(path);
    execFileSync('mkfifo', ['-m', '600', path]);
    expect(readCodeCache(path, ID)).toBeUndefined();
    rmSync(path);
    mkdirSync(path);
    expect(readCodeCache(path, ID)).toBeUndefined();
    rmSync(path, { recursive: true });
    writeCodeCache(path, ID, data);
    truncateSync(path, CACHE_MAX_BYTES + 1);
    expect(readCodeCache(path, ID)).toBeUndefined();
  });

  it('leaves no file aside when the rename fails (a folder where the cache goes)', () => {
    mkdirSync(path, { recursive: true });
    expect(writeCodeCache(path, ID, data)).toBe(false);
    expect(readdirSync(join(dir, 'v26'))).toEqual(['a2a-mailbridge-bundle.v8cache']);
  });
});
