/**
 * Fills a Dovecot user's Maildir with many messages fast: the files are written straight into
 * `<Maildir>/.<folder>/cur/` before Dovecot first opens the folder (Maildir++ layout, Dovecot's
 * default for `mail_location = maildir:~/Maildir`). Dovecot assigns UIDs and builds its index at
 * the first open, which the benchmark times separately. Writing files is ~50× faster than IMAP
 * APPEND, and APPEND would measure nothing the benchmark is about.
 *
 * The filler is the person's other mail (newsletters, colleagues, notifications) with, every 20th
 * message, an earlier reply of the agent (tagged subject, From the agent) — all below the
 * watermark, as after months of use. Files use LF line ends, as Dovecot stores them; the file name
 * carries `S=` (size on disk) and `W=` (size with CRLF, the RFC822.SIZE) so no stat is needed.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AGENT } from './mail-fixture.js';

const SENDERS = ['news@letters.example', 'alice@work.example', 'bob@work.example', 'noreply@shop.example', 'alerts@bank.example', 'team@project.example'];
const WORDS = 'the quarterly report meeting notes invoice delivery update schedule review draft project release budget travel plan agenda summary'.split(' ');

function filler(i: number, date: Date): string {
  const fromAgent = i % 20 === 0;
  const from = fromAgent ? `Grok Agent <${AGENT.address}>` : SENDERS[i % SENDERS.length]!;
  const subject = fromAgent
    ? `Re: your job [${AGENT.tag}:${`00000000-0000-4000-8000-${String(i).padStart(12, '0')}`}]`
    : `${WORDS[i % WORDS.length]} ${WORDS[(i * 7) % WORDS.length]} #${i}`;
  const lines: string[] = [];
  for (let l = 0; l < 24; l++) lines.push(Array.from({ length: 11 }, (_, w) => WORDS[(i + l * 3 + w * 5) % WORDS.length]).join(' '));
  return [
    `Return-Path: <${from.replace(/^.*<|>$/g, '')}>`,
    `Received: from mail.sender.example (mail.sender.example [198.51.100.${i % 250}])`,
    `\tby mx1.messagingengine.com (Postfix) with ESMTPS id B${i.toString(36).toUpperCase()}`,
    `\tfor <me@bridge.test>; ${date.toUTCString().replace('GMT', '+0000')}`,
    `From: ${from}`,
    'To: me@bridge.test',
    `Subject: ${subject}`,
    `Date: ${date.toUTCString().replace('GMT', '+0000')}`,
    `Message-ID: <filler-${i}@sender.example>`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: 7bit',
    '',
    ...lines,
    '',
  ].join('\n');
}

/**
 * Writes `count` messages into the Maildir++ folder `folder` of `maildir` (created if needed).
 * @returns bytes written
 */
export function fillFolder(maildir: string, folder: string, count: number): number {
  const dir = join(maildir, `.${folder}`);
  for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(dir, sub), { recursive: true });
  writeFileSync(join(dir, 'maildirfolder'), '');
  const start = Date.UTC(2025, 0, 1) / 1000;
  let total = 0;
  for (let i = 1; i <= count; i++) {
    const text = filler(i, new Date((start + i * 600) * 1000));
    const size = Buffer.byteLength(text);
    const virtual = size + (text.match(/\n/g)?.length ?? 0);
    const name = `${start + i * 600}.M${i}P1.bench,S=${size},W=${virtual}:2,S`;
    writeFileSync(join(dir, 'cur', name), text);
    total += size;
  }
  return total;
}

/**
 * Hands the Maildir to the mail user when running as root (Dovecot's test config runs mail
 * processes as `nobody`, see test/helpers/dovecot.ts); a no-op for other users.
 */
export function giveToMailUser(maildir: string): void {
  if (process.getuid?.() !== 0) return;
  const uid = execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' }).trim();
  const gid = execFileSync('id', ['-g', 'nobody'], { encoding: 'utf8' }).trim();
  execFileSync('chown', ['-R', `${uid}:${gid}`, maildir]);
}
