/**
 * A Maildir file a MUA renames while a check reads it (new/ → cur/ when shown, then again in cur/
 * when a flag changes; the unique name before `:2,` stays: Maildir spec) is re-found by a fresh
 * listing and read where it is now, however often it moved between a listing and a read, up to
 * MOVED_RELISTS listings (src/uplink/maildir-moved.ts). A real Maildir in a temp dir; the renames
 * happen through the reader's seams (`afterHeaderRead`, `afterRelist`) and between the pass's calls.
 */
import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { STAMP_PREFIX_BYTES } from '../../../src/uplink/gates.js';
import { MaildirMailbox } from '../../../src/uplink/maildir-mailbox.js';
import { MOVED_RELISTS } from '../../../src/uplink/maildir-moved.js';
import { CHECK_AGENT, checkRequest as req } from '../../helpers/check-request.js';

const T0 = Date.UTC(2025, 0, 1, 12, 0, 0);
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'mb-moved-'));
  for (const sub of ['new', 'cur', 'tmp']) mkdirSync(join(dir, sub));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A reply of the agent's; with `longHeader`, a header block past the prefix a check first reads. */
function mail(longHeader = false): Buffer {
  const filler = longHeader ? Array.from({ length: 400 }, (_, i) => `X-Filler-${i}: ${'f'.repeat(60)}\r\n`).join('') : '';
  return Buffer.from(`From: Agent <${CHECK_AGENT}>\r\nSubject: [GROK:t] moved\r\nMessage-ID: <m@agent.example>\r\n${filler}\r\nbody\r\n`);
}

/** Delivers `raw` as new/<unique>. */
function put(unique: string, raw: Buffer): void {
  const p = join(dir, 'new', unique);
  writeFileSync(p, raw);
  utimesSync(p, new Date(T0), new Date(T0));
}

/** Where the file of `unique` is now (`new/x`, `cur/x:2,S`). */
function whereIs(unique: string): string {
  for (const sub of ['new', 'cur']) for (const n of readdirSync(join(dir, sub))) if (n.split(':')[0] === unique) return `${sub}/${n}`;
  throw new Error(`${unique} is in neither new/ nor cur/`);
}

/** Renames the file of `unique` as a MUA does: new/ → cur/ `:2,`, then in cur/ to the flags `flags[i]` of the i-th call. */
function mua(unique: string, flags = ['', 'S', 'RS', 'FRS', 'DFRS', 'DFPRS']): () => void {
  let i = 0;
  return () => {
    const to = `cur/${unique}:2,${flags[i++ % flags.length]}`;
    renameSync(join(dir, whereIs(unique)), join(dir, to));
  };
}

describe('a Maildir file renamed more than once while a check reads it', () => {
  it('renamed between its header block and its whole read, and again after the listing that re-found it: read whole, not vanished', async () => {
    const raw = mail();
    put('1.a', raw);
    const rename = mua('1.a');
    let relists = 0;
    const box = new MaildirMailbox(dir, { afterHeaderRead: rename, afterRelist: () => void (relists++ === 0 && rename()) });
    const r = await box.check(req());
    expect(r.messages.map((m) => m.unreadable?.reason ?? 'read')).toEqual(['read']);
    expect(r.messages[0]!.raw).toEqual(raw);
    expect([whereIs('1.a'), relists]).toEqual(['cur/1.a:2,S', 2]);
  });

  it('renamed between the listing and its first read, and again after the listing that re-found it: handed out in this check', async () => {
    put('1.a', mail());
    const rename = mua('1.a');
    let relists = 0;
    const box = new MaildirMailbox(dir, { afterRelist: () => void (relists++ === 0 && rename()) });
    const pass = await box.open(req());
    rename(); // new/ → cur/ after the pass listed the folder
    const heads = await pass.headers();
    expect(heads.map((h) => [h.source, h.unreadable?.reason ?? 'read'])).toEqual([[`maildir:${dir}:1.a`, 'read']]);
    expect(pass.more).toBe(false);
    const [m] = await pass.whole(heads);
    expect(m!.raw).toEqual(mail());
    await pass.close();
  });

  it('a header block past the prefix, renamed before it is read on and again after the listing that re-found it: read on, not vanished', async () => {
    const raw = mail(true);
    expect(raw.indexOf('\r\n\r\n')).toBeGreaterThan(STAMP_PREFIX_BYTES);
    put('1.a', raw);
    const rename = mua('1.a');
    let relists = 0;
    const box = new MaildirMailbox(dir, { afterRelist: () => void (relists++ === 0 && rename()) });
    const pass = await box.open(req());
    const heads = await pass.headers();
    expect(heads.map((h) => h.prefixOnly)).toEqual([true]);
    rename();
    const [block] = await pass.headerBlocks(heads);
    expect(block!.unreadable).toBeUndefined();
    expect(block!.head.toString()).toBe(raw.subarray(0, raw.indexOf('\r\n\r\n') + 4).toString());
    await pass.close();
  });

  it(`gives up after ${MOVED_RELISTS} listings when the file moves after each: vanished, saying it kept moving (the work is bounded)`, async () => {
    put('1.a', mail());
    const rename = mua('1.a');
    let relists = 0;
    const box = new MaildirMailbox(dir, { afterHeaderRead: rename, afterRelist: () => void (relists++, rename()) });
    const r = await box.check(req());
    expect(r.messages.map((m) => m.unreadable?.reason ?? 'read')).toEqual(['vanished']);
    expect(r.messages[0]!.unreadable!.detail).toMatch(new RegExp(`1\\.a:2,\\S* was renamed again after each of ${MOVED_RELISTS} listings`));
    expect(relists).toBe(MOVED_RELISTS);
  });
});
