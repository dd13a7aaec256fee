import { execFileSync } from 'node:child_process';
import { symlinkSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type App } from '../../../src/app.js';
import { buildReplyMail, generateDkimKey } from '../../../src/demo/reply-mail.js';
import type { Envelope } from '../../../src/downlink/envelope.js';
import { createLogger } from '../../../src/log.js';
import { deliverToMaildir, MaildirMailbox } from '../../../src/uplink/maildir-mailbox.js';
import { newTaskVia, rpcResult } from '../../helpers/app-calls.js';
import { startMaildirWorld, type MaildirWorld } from '../../helpers/maildir-world.js';
import { AGENT_ADDRESS, AGENT_DOMAIN, hermesBody, hex, PROVIDER, SELECTOR } from '../../helpers/bridge-harness.js';
import type { WebhookReceiver } from '../../helpers/webhook-receiver.js';

/**
 * The bridge on a Maildir, end to end: every file that lands is judged once whatever its mtime,
 * and entries that are not mail, or mail deleted mid-read, never stop a check.
 */
let world: MaildirWorld;
let receiver: WebhookReceiver;
let app: App;
let maildir: string;
let key: ReturnType<typeof generateDkimKey>;
/** Files the Maildir reader deletes right after reading their header block (a MUA acting mid-check). */
const deleteMidRead = new Set<string>();

beforeAll(async () => {
  world = await startMaildirWorld();
  ({ receiver, maildir, key } = world);
  const mailbox = new MaildirMailbox(maildir, { afterHeaderRead: (file) => void (deleteMidRead.has(file) && unlinkSync(file)) });
  app = await startApp(world.config, { log: createLogger('silent'), mailbox });
  await app.bridge.idle();
});
afterAll(async () => {
  await app?.close();
  await world?.close();
});

/** The parts of a SendMessage result these tests read. */
interface TaskResult {
  task: { id: string; status: { state: string; message?: { parts: { text?: string }[] } }; artifacts: { parts: { text: string }[] }[] };
}

/** The bridge's sentence of the task's status. */
const statusOf = (task: TaskResult['task']): string => task.status.message?.parts[0]?.text ?? '';

const rpc = (body: unknown): Promise<TaskResult> => rpcResult<TaskResult>(app, body);
const newTask = (text: string): Promise<{ id: string; ctx: string; envelope: Envelope }> => newTaskVia(app, receiver, text);

function reply(env: Envelope, answer: string, from = `Grok Agent <${AGENT_ADDRESS}>`): Promise<Buffer> {
  return buildReplyMail({
    from,
    to: env.reply_to,
    subject: `Re: your job ${env.subject_tag}`,
    token: env.reply_token,
    status: 'done',
    answer,
    dkim: { domain: AGENT_DOMAIN, selector: SELECTOR, privateKeyPem: key.privateKeyPem },
    provider: PROVIDER,
  });
}

/** Delivers into new/ and sets the file's mtime (ms). */
async function deliver(raw: Buffer, mtimeMs?: number): Promise<string> {
  const path = await deliverToMaildir(maildir, raw);
  if (mtimeMs !== undefined) utimesSync(path, new Date(mtimeMs), new Date(mtimeMs));
  return path;
}

describe('the bridge on a Maildir', () => {
  it('judges every file once whatever its mtime; a symlink, a FIFO and a reply deleted mid-read never stop the check', async () => {
    const [a, b, c] = [await newTask('Job A'), await newTask('Job B'), await newTask('Job C')];
    // A forged tagged mail dated far in the future (judged last: its mtime counts as now).
    await deliver(await reply(a.envelope, 'Forged.', 'Grok Agent <agent@attacker.example>'), Date.UTC(2099, 0, 1));
    // A's genuine reply, moved in by a tool that kept an mtime of a year ago.
    await deliver(await reply(a.envelope, 'Answer A, with an old mtime.'), Date.now() - 365 * 86_400_000);
    // Not mail: a symlink and a FIFO in new/.
    symlinkSync('/etc/hostname', join(maildir, 'new', `${hex(4)}.symlink`));
    execFileSync('mkfifo', [join(maildir, 'new', `${hex(4)}.fifo`)]);
    writeFileSync(join(maildir, 'tmp', 'half-written'), 'From: agent@agent.example\r\n'); // tmp/ is never read
    // B's reply, deleted by a MUA between its header block and the whole read.
    const answerB = await reply(b.envelope, 'Answer B, deleted mid-read.');
    deleteMidRead.add(await deliver(answerB));
    await deliver(await reply(c.envelope, 'Answer C.'));

    const polled = await rpc(hermesBody('status', a.ctx));
    expect(polled.task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(polled.task.artifacts[0]?.parts[0]?.text).toContain('Answer A, with an old mtime.');
    expect((await rpc(hermesBody('status', c.ctx))).task.status.state).toBe('TASK_STATE_COMPLETED');
    expect((await rpc(hermesBody('status', b.ctx))).task.status.state).toBe('TASK_STATE_WORKING');

    const rows = app.bridge.ctx.store.ledger.query({ limit: 20 }).reverse();
    // The forgery is refused on its header block, with the batch it came in: before the replies
    // that passed the header gates are read whole (oldest first).
    expect(rows.map((r) => [r.taskId ?? r.subject, r.verdict])).toEqual([
      [a.id, 'auth:from-mismatch'],
      [a.id, 'applied:done'],
      // Its header block was read: the row names task B, whose caller hears of it.
      [b.id, 'unreadable:vanished'],
      [c.id, 'applied:done'],
    ]);
    expect(rows[2]!.reason).toMatch(/was deleted after its header block was read$/);
    expect(statusOf((await rpc(hermesBody('status', b.ctx))).task)).toContain("(verdict unreadable:vanished, seen ");
    const state = app.bridge.ctx.store.mailbox.state(app.bridge.ctx.mailbox.folder);
    expect(state.lastError).toBeNull();
    // Nothing is judged twice, and a later genuine reply with an old mtime is still seen.
    expect((await app.bridge.checkNow()).fetched).toBe(0);
    // A copy of B's reply delivered again is judged — its bytes were never read whole — not taken
    // for a copy of the row that says they could not be (was: duplicate, by its header block's digest).
    await deliver(answerB);
    expect((await rpc(hermesBody('status', b.ctx))).task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(app.bridge.ctx.store.ledger.ofTask(b.id).map((r) => r.verdict)).toEqual(['unreadable:vanished', 'applied:done']);
    const d = await newTask('Job D');
    await deliver(await reply(d.envelope, 'Answer D, dated from its Date header.'), Date.UTC(2001, 0, 1));
    expect((await rpc(hermesBody('status', d.ctx))).task.status.state).toBe('TASK_STATE_COMPLETED');
  });

  it('gives each of four different files sharing two unique names a verdict, and counts untagged files without a row', async () => {
    const e = await newTask('Job E');
    const mail = (n: string): string => `From: Grok Agent <${AGENT_ADDRESS}>\r\nSubject: Re: ${e.envelope.subject_tag}\r\nDate: ${new Date().toUTCString()}\r\nMessage-ID: <${n}@${AGENT_DOMAIN}>\r\n\r\nstatus: done\r\n${n}\r\n`;
    writeFileSync(join(maildir, 'new', '1700000000.same.host:2,'), mail('first'));
    writeFileSync(join(maildir, 'cur', '1700000000.same.host:2,S'), mail('second'));
    writeFileSync(join(maildir, 'new', '1700000001.other.host'), mail('third'));
    writeFileSync(join(maildir, 'new', '1700000001.other.host:2,T'), mail('fourth'));
    for (let i = 0; i < 3; i++) writeFileSync(join(maildir, 'new', `1700000002.junk${i}.host`), `From: news@other.example\r\nSubject: weekly ${i}\r\n\r\nhi\r\n`);
    const summary = await app.bridge.checkNow();
    expect(summary.notOurs).toBe(3);
    const rows = app.bridge.ctx.store.ledger.ofTask(e.id);
    expect(rows.map((r) => r.messageId).sort()).toEqual(['first', 'fourth', 'second', 'third'].map((n) => `<${n}@${AGENT_DOMAIN}>`));
    expect(app.bridge.ctx.store.mailbox.notOursCount(maildir)).toBe(3);
    expect(app.bridge.ctx.store.mailbox.state(maildir).lastResult).toMatch(/, 3 files not ours$/);
  });
});
