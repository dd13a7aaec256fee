import { unlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type App } from '../../../src/app.js';
import type { Config } from '../../../src/config/config.js';
import { buildReplyMail, generateDkimKey } from '../../../src/demo/reply-mail.js';
import type { Envelope } from '../../../src/downlink/envelope.js';
import { createLogger } from '../../../src/log.js';
import { THIN_REASON } from '../../../src/store/prune-thin.js';
import { maildirSource } from '../../../src/uplink/maildir-files.js';
import { deliverToMaildir, MaildirMailbox, uniqueName } from '../../../src/uplink/maildir-mailbox.js';
import { newTaskVia, rpcResult } from '../../helpers/app-calls.js';
import { startMaildirWorld, type MaildirWorld } from '../../helpers/maildir-world.js';
import { AGENT_ADDRESS, AGENT_DOMAIN, hermesBody, PROVIDER, SELECTOR } from '../../helpers/bridge-harness.js';
import type { ConfigDir } from '../../helpers/config-dir.js';
import { runCli } from '../../helpers/cli.js';
import { pruneAll } from '../../helpers/run-prune.js';
import type { WebhookReceiver } from '../../helpers/webhook-receiver.js';

/**
 * `prune` on a store whose mailbox is a real Maildir, then a restart on the same store: a file
 * still in the folder whose row prune would delete keeps a thin row (its verdict), so the new
 * bridge does not judge it again, and a reply to a task that stays is never applied twice
 * (docs/architecture.md, "Retention and the Maildir").
 */
let world: MaildirWorld;
let receiver: WebhookReceiver;
let dir: ConfigDir;
let config: Config;
let app: App;
let maildir: string;
let key: ReturnType<typeof generateDkimKey>;

const start = async (): Promise<App> => {
  const started = await startApp(config, { log: createLogger('silent'), mailbox: new MaildirMailbox(maildir) });
  await started.bridge.idle();
  return started;
};

beforeAll(async () => {
  world = await startMaildirWorld();
  ({ receiver, dir, config, maildir, key } = world);
  app = await start();
});
afterAll(async () => {
  await app?.close();
  await world?.close();
});

interface TaskResult {
  task: { id: string; status: { state: string } };
}

const rpc = (body: unknown): Promise<TaskResult> => rpcResult<TaskResult>(app, body);
const newTask = (text: string): Promise<{ id: string; ctx: string; envelope: Envelope }> => newTaskVia(app, receiver, text);

function reply(env: Envelope, answer: string, o: { status?: string; from?: string } = {}): Promise<Buffer> {
  return buildReplyMail({
    from: o.from ?? `Grok Agent <${AGENT_ADDRESS}>`,
    to: env.reply_to,
    subject: `Re: your job ${env.subject_tag}`,
    token: env.reply_token,
    status: o.status ?? 'done',
    answer,
    dkim: { domain: AGENT_DOMAIN, selector: SELECTOR, privateKeyPem: key.privateKeyPem },
    provider: PROVIDER,
  });
}

describe('prune on a Maildir, then a restart', () => {
  it('judges no pruned file again, adds no ledger row, applies no reply twice; a thin row goes once its file is gone', async () => {
    const [a, b, c] = [await newTask('Job A'), await newTask('Job B'), await newTask('Job C')];
    const fileA = await deliverToMaildir(maildir, await reply(a.envelope, 'Answer A.'));
    await deliverToMaildir(maildir, await reply(a.envelope, 'Forged.', { from: 'Grok Agent <agent@attacker.example>' }));
    // Two different files sharing a unique name, tagged for A: keyed apart (`X` and `X/ino<inode>`).
    const unsigned = (n: string): string => `From: Grok Agent <${AGENT_ADDRESS}>\r\nSubject: Re: ${a.envelope.subject_tag}\r\nDate: ${new Date().toUTCString()}\r\nMessage-ID: <${n}@${AGENT_DOMAIN}>\r\n\r\nstatus: done\r\n${n}\r\n`;
    writeFileSync(join(maildir, 'new', '1700000000.same.host:2,'), unsigned('first'));
    writeFileSync(join(maildir, 'cur', '1700000000.same.host:2,S'), unsigned('second'));
    // B stays open (a progress note: its token still valid, so a second application would be taken).
    await deliverToMaildir(maildir, await reply(b.envelope, 'Still on it.', { status: 'working' }));
    const fileC = await deliverToMaildir(maildir, await reply(c.envelope, 'Answer C.'));
    await app.bridge.checkNow();
    const store = () => app.bridge.ctx.store;
    expect((await rpc(hermesBody('status', a.ctx))).task.status.state).toBe('TASK_STATE_COMPLETED');
    expect((await rpc(hermesBody('status', b.ctx))).task.status.state).toBe('TASK_STATE_WORKING');
    expect((await rpc(hermesBody('status', c.ctx))).task.status.state).toBe('TASK_STATE_COMPLETED');
    const judged = store().ledger.query({ limit: 100 });
    expect(judged).toHaveLength(6);
    const verdictOf = new Map(judged.map((r) => [r.source, r.verdict]));
    const bRows = store().ledger.ofTask(b.id);
    expect(bRows.map((r) => r.verdict)).toEqual(['applied:working']);
    expect(store().replies.ofTask(b.id)).toHaveLength(1);
    const cRow = store().ledger.ofTask(c.id)[0]!;
    unlinkSync(fileC); // C's reply is deleted from the folder: its row goes
    await app.close();

    // Dry run and prune, with the bridge stopped: A and C go; A's four files are still there.
    const planned = await pruneAll(dir.configPath, true);
    expect(planned).toMatchObject({ tasks: 2, ledger: 1, ledgerThinned: 4 });
    expect(await pruneAll(dir.configPath, false)).toEqual(planned);

    // A restart on the same store: its first check (awaited by start) judged nothing again, so
    // the rows are those judged before but C's — no new id.
    app = await start();
    const rows = store().ledger.query({ limit: 100 });
    expect(rows.map((r) => r.id)).toEqual(judged.map((r) => r.id).filter((id) => id !== cRow.id));
    const thin = rows.filter((r) => r.reason === THIN_REASON);
    expect(thin).toHaveLength(4);
    // Each keeps its source and verdict; the rest of the row is gone.
    for (const r of thin) expect(r).toMatchObject({ taskId: null, messageId: null, subject: null, fromHeader: null, rawSha256: '', verdict: verdictOf.get(r.source) });
    expect(thin.some((r) => r.source.includes('/ino'))).toBe(true);
    expect(thin.every((r) => store().ledger.raw(r.id) === null)).toBe(true);
    // `ledger --raw` of a thin row says prune removed the bytes (attack review 9: it said only untagged mail has none).
    const raw = await runCli(['--config', dir.configPath, 'ledger', '--raw', String(thin[0]!.id)]);
    expect([raw.status, raw.stderr]).toEqual([1, `a2a-mailbridge: ledger row #${thin[0]!.id} (${thin[0]!.verdict}) kept no raw bytes: prune removed them and kept only the verdict, while the file is in the Maildir (${thin[0]!.source})\n`]);
    expect(store().ledger.ofTask(b.id)).toEqual(bRows); // the open task's row stays whole

    // Nor does a later check: no verdict, no row, and B's progress note is not applied again.
    expect((await app.bridge.checkNow()).fetched).toBe(0);
    expect(store().ledger.query({ limit: 100 }).map((r) => r.id)).toEqual(rows.map((r) => r.id));
    expect(store().replies.ofTask(b.id)).toHaveLength(1);
    expect(store().turns.ofTask(b.id)).toHaveLength(1);
    expect((await rpc(hermesBody('status', b.ctx))).task.status.state).toBe('TASK_STATE_WORKING');
    await app.close();

    // A's reply is deleted: the next prune deletes its thin row; the three others stay, not counted again.
    unlinkSync(fileA);
    expect(await pruneAll(dir.configPath, true)).toMatchObject({ tasks: 0, ledger: 1, ledgerThinned: 0 });
    expect(await pruneAll(dir.configPath, false)).toMatchObject({ tasks: 0, ledger: 1, ledgerThinned: 0 });
    app = await start();
    const rowA = rows.find((r) => r.source === maildirSource(maildir, uniqueName(basename(fileA))))!;
    expect(rowA.reason).toBe(THIN_REASON);
    expect(store().ledger.query({ limit: 100 }).map((r) => r.id)).toEqual(rows.map((r) => r.id).filter((id) => id !== rowA.id));
    expect(store().ledger.query({ limit: 100 }).filter((r) => r.reason === THIN_REASON)).toHaveLength(3);
    expect((await app.bridge.checkNow()).fetched).toBe(0);
  });
});
