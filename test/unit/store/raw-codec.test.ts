/**
 * Raw mail in the ledger (src/store/ledger.ts): small raws stored DEFLATE-compressed (raw_codec
 * `deflate-raw`), large and incompressible ones as fetched; every read gives back the fetched
 * bytes, a backup copy's too; a codec this version does not know is refused by name.
 */
import Database from 'better-sqlite3';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RAW_COMPRESS_MAX_BYTES } from '../../../src/store/ledger.js';
import { Store, StoreError } from '../../../src/store/store.js';

const dir = mkdtempSync(join(tmpdir(), 'mb-rawcodec-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const mail = (n: number): Buffer =>
  Buffer.from(`From: Grok <agent@agent.example>\r\nSubject: Re: job ${n}\r\n\r\n${'status: done\r\nthe answer, line by line\r\n'.repeat(n)}`);

function record(store: Store, source: string, raw: Buffer): number {
  return store.tx((tx) => tx.ledger.record({
    source, seenAt: 1000, messageId: null, fromHeader: null, subject: null, dateHeader: null, size: raw.length,
    rawSha256: createHash('sha256').update(raw).digest('hex'), raw, agent: 'grok', taskId: null, verdict: 'no-task-id', reason: 'r',
  }))!;
}

function stored(path: string, id: number): { bytes: number; codec: string | null } {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare('SELECT length(raw) AS bytes, raw_codec AS codec FROM ledger WHERE id = ?').get(id) as { bytes: number; codec: string | null };
  } finally {
    db.close();
  }
}

describe('ledger raw bytes', () => {
  const path = join(dir, 'store.sqlite');
  const small = mail(100);
  const large = mail(Math.ceil(RAW_COMPRESS_MAX_BYTES / 30));
  const noise = randomBytes(4000);
  const store = Store.open(path);
  const ids = { small: record(store, 'm:1', small), large: record(store, 'm:2', large), noise: record(store, 'm:3', noise) };
  store.close();

  it('stores a small raw compressed, a large or incompressible one as fetched, and reads each back exactly', () => {
    expect(large.length).toBeGreaterThan(RAW_COMPRESS_MAX_BYTES);
    expect(stored(path, ids.small)).toMatchObject({ codec: 'deflate-raw' });
    expect(stored(path, ids.small).bytes).toBeLessThan(small.length / 4);
    expect(stored(path, ids.large)).toEqual({ bytes: large.length, codec: null });
    expect(stored(path, ids.noise)).toEqual({ bytes: noise.length, codec: null });
    const ro = Store.open(path, { readOnly: true });
    try {
      expect(ro.ledger.raw(ids.small)?.equals(small)).toBe(true);
      expect(ro.ledger.raw(ids.large)?.equals(large)).toBe(true);
      expect(ro.ledger.raw(ids.noise)?.equals(noise)).toBe(true);
    } finally {
      ro.close();
    }
  });

  it('gives back the fetched bytes from a backup copy', async () => {
    const copy = join(dir, 'copy.sqlite');
    const s = Store.open(path, { readOnly: true });
    await s.backup(copy);
    s.close();
    const c = Store.open(copy, { readOnly: true });
    try {
      expect(c.quickCheck().ok).toBe(true);
      expect(c.ledger.raw(ids.small)?.equals(small)).toBe(true);
    } finally {
      c.close();
    }
  });

  it('refuses a codec it does not know, naming it, and a damaged compressed row', () => {
    const db = new Database(path);
    db.prepare(`UPDATE ledger SET raw_codec = 'zstd' WHERE id = ?`).run(ids.small);
    db.prepare(`UPDATE ledger SET raw = x'ffff', raw_codec = 'deflate-raw' WHERE id = ?`).run(ids.noise);
    db.close();
    const s = Store.open(path, { readOnly: true });
    try {
      expect(() => s.ledger.raw(ids.small)).toThrow(StoreError);
      expect(() => s.ledger.raw(ids.small)).toThrow(/ledger #1: raw bytes stored in an unknown encoding \(raw_codec "zstd"\); this a2a-mailbridge reads deflate-raw only/);
      expect(() => s.ledger.raw(ids.noise)).toThrow(/ledger #3: the stored raw bytes do not inflate/);
      expect(s.ledger.raw(ids.large)?.equals(large)).toBe(true);
    } finally {
      s.close();
    }
  });
});
