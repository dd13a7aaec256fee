/**
 * Runs one MaildirMailbox check in this process and prints the result as JSON (raw bytes in
 * base64) on stdout: `tsx test/helpers/maildir-check-child.ts <folder> <request JSON>`, where the
 * request may carry `recorded` (the sources isRecorded says yes to). Used by maildir-as-user.ts to
 * read a Maildir as another user, so a file of mode 0000 is unreadable even when the suite runs as root.
 */
import { MaildirMailbox } from '../../src/uplink/maildir-mailbox.js';
import type { CheckRequest } from '../../src/uplink/mailbox.js';

const [folder, json] = process.argv.slice(2);
const req = JSON.parse(json!) as CheckRequest & { recorded?: string[] };
const recorded = new Set(req.recorded ?? []);
const result = await new MaildirMailbox(folder!).check({ ...req, isRecorded: (s) => recorded.has(s) });
process.stdout.write(JSON.stringify({ ...result, messages: result.messages.map((m) => ({ ...m, raw: m.raw.toString('base64') })) }));
