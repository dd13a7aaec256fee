/**
 * src/uplink/message-by-source.ts over IMAP, against a real Dovecot: the message a ledger source
 * names is read whole, read-only (its flags unchanged), only while the folder's UIDVALIDITY is the
 * one in the source (RFC 9051 §2.3.1.1: after a new UIDVALIDITY, the same UID is another message)
 * and the message begins with the bytes the ledger kept.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageBySource, type SourceMailbox } from '../../../src/uplink/message-by-source.js';
import { startDovecot, type DovecotHandle } from '../../helpers/dovecot.js';
import { readProviderMessage } from '../../helpers/provider-corpus.js';
import { splitMessage } from '../../../src/uplink/raw-headers.js';

let dovecot: DovecotHandle;
beforeAll(async () => {
  dovecot = await startDovecot();
});
afterAll(async () => {
  await dovecot.stop();
});

const MAIL = Buffer.from(readProviderMessage('gmail/01-genuine-done.eml'));
/** What the ledger keeps of mail refused on its header block: the block. */
const KEPT = Buffer.from(splitMessage(MAIL).header);

function mailbox(folder: string): SourceMailbox {
  return {
    kind: 'imap',
    folder,
    imap: { host: dovecot.host, port: dovecot.port, tls: false, user: dovecot.user, password: dovecot.password, timeoutMs: 10_000 },
    auth: () => Promise.resolve({ user: dovecot.user, pass: dovecot.password }),
  };
}

describe('a ledger source read again over IMAP', () => {
  it('gives the message whole, and leaves it unseen', async () => {
    await dovecot.createFolder('Again');
    const uid = await dovecot.append(MAIL, { folder: 'Again' });
    const validity = await dovecot.uidValidity('Again');
    const got = await messageBySource(mailbox('Again'), `imap:Again:${validity}:${uid}`, { size: MAIL.length, kept: KEPT }, 1 << 20);
    expect(got?.equals(MAIL)).toBe(true);
    expect(await dovecot.flagsOf(uid, 'Again')).toEqual([]);
  });

  it('gives nothing for another UIDVALIDITY, another size, other kept bytes, a message over the cap, or another folder', async () => {
    await dovecot.createFolder('Other');
    const uid = await dovecot.append(MAIL, { folder: 'Other' });
    const validity = await dovecot.uidValidity('Other');
    const source = `imap:Other:${validity}:${uid}`;
    expect(await messageBySource(mailbox('Other'), `imap:Other:${validity + 1n}:${uid}`, { size: MAIL.length, kept: KEPT }, 1 << 20)).toBeNull();
    expect(await messageBySource(mailbox('Other'), source, { size: MAIL.length + 1, kept: KEPT }, 1 << 20)).toBeNull();
    expect(await messageBySource(mailbox('Other'), source, { size: MAIL.length, kept: Buffer.from('X-Other: 1\r\n') }, 1 << 20)).toBeNull();
    expect(await messageBySource(mailbox('Other'), source, { size: MAIL.length, kept: KEPT }, MAIL.length - 1)).toBeNull();
    expect(await messageBySource(mailbox('Again'), source, { size: MAIL.length, kept: KEPT }, 1 << 20)).toBeNull();
  });

  it('gives nothing once the folder was deleted and made again (a new UIDVALIDITY), though a message has that UID again', async () => {
    await dovecot.createFolder('Remade');
    const uid = await dovecot.append(MAIL, { folder: 'Remade' });
    const source = `imap:Remade:${await dovecot.uidValidity('Remade')}:${uid}`;
    await dovecot.deleteFolder('Remade');
    await dovecot.createFolder('Remade');
    expect(await dovecot.append(MAIL, { folder: 'Remade' })).toBe(uid);
    expect(await messageBySource(mailbox('Remade'), source, { size: MAIL.length, kept: KEPT }, 1 << 20)).toBeNull();
  });
});
