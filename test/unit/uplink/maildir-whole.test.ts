import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MaildirMailbox } from '../../../src/uplink/maildir-mailbox.js';
import type { MailboxError } from '../../../src/uplink/mailbox.js';
import { checkRequest } from '../../helpers/check-request.js';

describe('a Maildir missing one of its folders', () => {
  // A fresh user's trial: with new/ gone, serve said "reachable (nothing new)" while doctor failed.
  it('throws MailboxError io, naming the folder to make, for a Maildir missing new/ or cur/', async () => {
    for (const gone of ['new', 'cur']) {
      const half = mkdtempSync(join(tmpdir(), 'mb-halfmaildir-'));
      try {
        for (const sub of ['cur', 'new', 'tmp'].filter((s) => s !== gone)) mkdirSync(join(half, sub));
        const err = await new MaildirMailbox(half).check(checkRequest()).catch((e: unknown) => e);
        expect(err).toMatchObject({ name: 'MailboxError', kind: 'io' });
        expect((err as MailboxError).message).toBe(`${half} is not a whole Maildir: it has no ${gone}/ (mail is delivered into new/ and moved to cur/); make it: mkdir -p ${join(half, gone)}`);
      } finally {
        rmSync(half, { recursive: true, force: true });
      }
    }
  });
});
