import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { CheckRequest, CheckResult } from '../../src/uplink/mailbox.js';

/** `nobody` on Linux: the unprivileged user a root test run reads as. */
const NOBODY = 65534;

/**
 * One MaildirMailbox check as an unprivileged user, so file permissions hold: as root (who may
 * read any file) the check runs in a child process as `nobody`, the folder handed over to it
 * (its files chowned to `nobody` with their modes kept, its parents made traversable); as any
 * other user, in a child process as that user. The request's `isRecorded` is replaced by the
 * list `recorded`.
 */
export function checkAsUser(folder: string, req: Omit<CheckRequest, 'isRecorded'> & { recorded?: string[] }): CheckResult {
  const root = process.getuid?.() === 0;
  if (root) {
    for (let d = dirname(folder); d !== dirname(d); d = dirname(d)) chmodSync(d, statSync(d).mode | 0o001);
    chownSync(folder, NOBODY, NOBODY);
    for (const sub of readdirSync(folder)) {
      chownSync(join(folder, sub), NOBODY, NOBODY);
      if (statSync(join(folder, sub)).isDirectory()) for (const f of readdirSync(join(folder, sub))) chownSync(join(folder, sub, f), NOBODY, NOBODY);
    }
  }
  const out = execFileSync(process.execPath, ['--import', 'tsx', 'test/helpers/maildir-check-child.ts', folder, JSON.stringify(req)], {
    encoding: 'utf8',
    timeout: 30_000,
    ...(root ? { uid: NOBODY, gid: NOBODY } : {}),
  });
  const parsed = JSON.parse(out) as Omit<CheckResult, 'messages'> & { messages: (Omit<CheckResult['messages'][number], 'raw'> & { raw: string })[] };
  return { ...parsed, messages: parsed.messages.map((m) => ({ ...m, raw: Buffer.from(m.raw, 'base64') })) };
}
