import { mkdirSync, mkdtempSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { deliverToMaildir, MaildirMailbox } from '../../../src/uplink/maildir-mailbox.js';

const mail = (subject: string) => Buffer.from(`From: agent@agent.example\r\nSubject: ${subject}\r\n\r\nbody\r\n`);

describe('Maildir watermark', () => {
  it('a file with a future mtime does not carry the watermark past later deliveries', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mb-maildir-'));
    for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(dir, sub));
    const box = new MaildirMailbox(dir);
    const future = await deliverToMaildir(dir, mail('[GROK:11111111-2222-4333-8444-555555555555] spam'));
    const year2099 = new Date('2099-01-01T00:00:00Z');
    utimesSync(future, year2099, year2099);
    const req = { fromAddresses: ['agent@agent.example'], subjectContains: ['[GROK:'], maxFetch: 10, maxMessageBytes: 1 << 20 };
    const recorded = new Set<string>();
    const first = await box.check({ ...req, watermark: { uidValidity: null, lastUid: 0 }, isRecorded: (s) => recorded.has(s) });
    expect(first.messages).toHaveLength(1);
    const uid = first.messages[0]!.uid;
    expect(uid).toBeLessThanOrEqual(Date.now());
    recorded.add(first.messages[0]!.source);
    await new Promise((r) => setTimeout(r, 20));
    await deliverToMaildir(dir, mail('[GROK:11111111-2222-4333-8444-555555555555] the real reply'));
    const second = await box.check({ ...req, watermark: { uidValidity: first.uidValidity, lastUid: uid }, isRecorded: (s) => recorded.has(s) });
    expect(second.messages.map((m) => m.raw.toString())).toEqual([mail('[GROK:11111111-2222-4333-8444-555555555555] the real reply').toString()]);
  });
});
