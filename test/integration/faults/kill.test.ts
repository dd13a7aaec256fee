import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Envelope } from '../../../src/downlink/envelope.js';
import { startDnsZone, type DnsZone } from '../../../src/demo/dns-zone.js';
import { dkimTxtName, generateDkimKey } from '../../../src/demo/reply-mail.js';
import { type TaskRow } from '../../../src/store/task-rows.js';
import { agentReply, AGENT_DOMAIN, harnessToml, hermesBody, SELECTOR } from '../../helpers/bridge-harness.js';
import { makeConfigDir, TEST_BEARER, TEST_WEBHOOK_BEARER, TEST_WEBHOOK_SECRET, writeSecret, type ConfigDir } from '../../helpers/config-dir.js';
import { startDovecot, type DovecotHandle } from '../../helpers/dovecot.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver.js';
import { killAll, quickCheck, readStore, startBridgeProcess, type BridgeProcess } from './bridge-process.js';
import { unfence } from '../../helpers/agent-text.js';
import { newContext, shown } from './caller-view.js';
import { freePort } from '../../helpers/free-port.js';
import { Summary } from './summary.js';
import type { V1Task } from '../../../src/a2a/wire.js';
import type { ResultOfBody, RpcAnswer } from '../../helpers/rpc-json.js';

/**
 * Kill tests. The bridge runs as a child process (`serve`, from source) against a real Dovecot, a
 * real webhook receiver that dedupes by `webhook-id`, and a loopback DNS zone with the agent's DKIM
 * key. A failpoint makes the process SIGKILL itself (no clean-up, no flush); it is then started
 * again without the failpoint on the same store and port. After every kill and every restart the
 * store passes `PRAGMA quick_check`.
 */
let dovecot: DovecotHandle;
let zone: DnsZone;
const key = generateDkimKey();
let folders = 0;
const summary = new Summary('Kill tests (test/integration/faults/kill.test.ts)');

beforeAll(async () => {
  dovecot = await startDovecot();
  zone = await startDnsZone([{ name: dkimTxtName(SELECTOR, AGENT_DOMAIN), type: 'TXT', data: key.publicKeyTxt }]);
});
afterEach(async () => {
  await killAll();
});
afterAll(async () => {
  await killAll();
  await zone?.close();
  await dovecot?.stop();
  summary.print();
});

interface Setup {
  cfg: ConfigDir;
  store: string;
  port: number;
  folder: string;
  receiver: WebhookReceiver;
  url: string;
}

/** A config on a fixed free port, its own folder and store, and a receiver answering 202. */
async function setup(): Promise<Setup> {
  const folder = `K${++folders}`;
  await dovecot.createFolder(folder);
  const receiver = await startWebhookReceiver({ secret: TEST_WEBHOOK_SECRET, bearer: TEST_WEBHOOK_BEARER });
  const port = await freePort();
  // A poll waits for the whole mailbox check (check_wait_ms), however slow the machine: the poll
  // that applies a reply is then still open when the process kills itself while applying it.
  const cfg = makeConfigDir(harnessToml({ dovecot, port, zoneAddress: zone.address, webhookUrl: receiver.url, mailboxToml: `folder = "${folder}"\ncheck_wait_ms = 20000` }));
  writeSecret(cfg.dir, 'imap-password', dovecot.password);
  afterCleanup.push(async () => {
    await receiver.close();
    rmSync(cfg.dir, { recursive: true, force: true });
  });
  return { cfg, store: join(cfg.dir, 'state', 'bridge.sqlite'), port, folder, receiver, url: `http://127.0.0.1:${port}/agents/grok` };
}
const afterCleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const f of afterCleanup.splice(0)) await f();
});

/** A JSON-RPC POST to the bridge; `null` when the connection was cut (the process died). */
async function post<B>(s: Setup, body: B): Promise<{ status: number; json: RpcAnswer<ResultOfBody<B>> } | { cut: string }> {
  try {
    const res = await fetch(s.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_BEARER}`, 'a2a-version': '1.0' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    return { status: res.status, json: (await res.json()) as RpcAnswer<ResultOfBody<B>> };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    return { cut: `${e.message}: ${e.cause?.code ?? e.cause?.message ?? ''}` };
  }
}

/** What {@link answered} returns: the Task of a SendMessage, else the method's result. */
type Answer<B> = B extends { method: 'SendMessage' } ? V1Task : ResultOfBody<B>;

/** A call that must answer: HTTP 200 and a task (or, for another method, its result). */
async function answered<const B>(s: Setup, body: B): Promise<Answer<B>> {
  const r = await post(s, body);
  if ('cut' in r) throw new Error(`the call was cut: ${r.cut}`);
  expect(r.status).toBe(200);
  expect(r.json.error).toBeUndefined();
  const result = r.json.result as { task?: V1Task } | undefined;
  return (result?.task ?? result) as Answer<B>;
}

/**
 * Waits for the bridge to log that the task moved to `state` (the dispatch or check after a
 * restart runs in the background), then polls on `ctx` once.
 */
async function afterChange(s: Setup, p: BridgeProcess, taskId: string, ctx: string, state: string): Promise<V1Task> {
  await p.log('task changed', (e) => e.task === taskId && e.to === state);
  return answered(s, hermesBody('status', ctx));
}

const tasksIn = (store: string): TaskRow[] => readStore(store, (db) => db.tasks.rows({ limit: 100 }));

async function died(p: BridgeProcess): Promise<string> {
  const { code, signal } = await p.exited;
  expect(signal).toBe('SIGKILL');
  return `${signal ?? code}`;
}

describe('SIGKILL at a failpoint, then a restart', () => {
  it('(a) after-task-stored: the call is cut, the task survives, and the dispatch happens after the restart — one webhook-id', async () => {
    const s = await setup();
    const ctx = newContext();
    const body = hermesBody('Summarise the report', ctx);
    const p1 = await startBridgeProcess(s.cfg.configPath, 'after-task-stored');
    const r = await post(s, body);
    expect('cut' in r, 'the SendMessage call must be cut by the kill').toBe(true);
    await died(p1);
    expect(s.receiver.requests).toHaveLength(0);
    expect(quickCheck(s.store)).toBe('ok');
    const [stored] = tasksIn(s.store);
    expect(stored).toMatchObject({ contextId: ctx, state: 'SUBMITTED' });
    expect(readStore(s.store, (db) => db.turns.ofTask(stored!.id).map((t) => t.dispatchState))).toEqual(['pending']);

    const p2 = await startBridgeProcess(s.cfg.configPath);
    await s.receiver.waitForRequests(1, 10_000);
    // The caller retries the very same message after the reset: the same task, no second dispatch.
    const replay = await answered(s, body);
    expect(replay.id).toBe(stored!.id);
    const task = await afterChange(s, p2, stored!.id, ctx, 'WORKING');
    expect(task).toMatchObject({ id: stored!.id, status: { state: 'TASK_STATE_WORKING' } });
    const listed = await answered(s, { jsonrpc: '2.0', id: 2, method: 'ListTasks', params: { contextId: ctx } });
    expect(listed.tasks.map((t) => t.id)).toEqual([stored!.id]);
    expect(quickCheck(s.store)).toBe('ok');
    await p2.stop();
    expect(s.receiver.requests).toHaveLength(1);
    expect(s.receiver.distinctIds()).toHaveLength(1);
    expect(s.receiver.requests[0]!.verified).toBe(true);
    expect(tasksIn(s.store)).toHaveLength(1);
    summary.add(
      '(a) SIGKILL after-task-stored',
      `SendMessage cut (${(r as { cut: string }).cut.trim()}); store quick_check ok with the task SUBMITTED, dispatch pending, 0 POSTs; after restart the start-up refresh dispatched it: 1 POST, 1 distinct webhook-id; a retried identical SendMessage returned the same task; poll/ListTasks on the context → that task, WORKING; quick_check ok`,
    );
  });

  it('(b) after-webhook-2xx: the receiver got the POST but nothing was recorded; the restart resends with the same webhook-id', async () => {
    const s = await setup();
    const ctx = newContext();
    const p1 = await startBridgeProcess(s.cfg.configPath, 'after-webhook-2xx');
    const r = await post(s, hermesBody('Summarise the report', ctx));
    expect('cut' in r).toBe(true);
    await died(p1);
    expect(s.receiver.requests).toHaveLength(1);
    expect(quickCheck(s.store)).toBe('ok');
    const [stored] = tasksIn(s.store);
    expect(stored).toMatchObject({ contextId: ctx, state: 'SUBMITTED' });
    expect(readStore(s.store, (db) => db.attempts.ofTask(stored!.id))).toMatchObject([{ attempt: 1, finishedAt: null, outcome: null }]);

    const p2 = await startBridgeProcess(s.cfg.configPath);
    const task = await afterChange(s, p2, stored!.id, ctx, 'WORKING');
    expect(task.status.state).toBe('TASK_STATE_WORKING');
    expect(quickCheck(s.store)).toBe('ok');
    await p2.stop();
    expect(s.receiver.requests).toHaveLength(2);
    expect(s.receiver.distinctIds()).toEqual([readStore(s.store, (db) => db.turns.ofTask(stored!.id)[0]!.dispatchId)]);
    expect(s.receiver.requests.every((q) => q.verified)).toBe(true);
    const attempts = readStore(s.store, (db) => db.attempts.ofTask(stored!.id));
    expect(attempts.map((a) => [a.attempt, a.outcome, a.httpStatus, a.error])).toEqual([
      [1, 'retry', null, 'interrupted: the process stopped during the attempt'],
      [2, 'accepted', 202, null],
    ]);
    summary.add(
      '(b) SIGKILL after-webhook-2xx',
      'SendMessage cut; the receiver had 1 POST, the store an unfinished attempt #1 (task SUBMITTED, quick_check ok); at restart #1 was closed as "interrupted" and the dispatch resumed at once: 2 POSTs, 1 distinct webhook-id (at least once), attempts [#1 retry interrupted, #2 accepted 202] → WORKING; quick_check ok',
    );
  });

  it('(c) while-applying-reply: the kill rolls the apply back; after the restart the reply is applied exactly once', async () => {
    const s = await setup();
    const ctx = newContext();
    const p1 = await startBridgeProcess(s.cfg.configPath, 'while-applying-reply');
    const first = await answered(s, hermesBody('Summarise the report', ctx));
    expect(first.status.state).toBe('TASK_STATE_WORKING');
    // The start-up check must be over, or the poll below would join it and miss the reply.
    await p1.log('mailbox check done');
    const env = s.receiver.requests[0]!.envelope as Envelope;
    const raw = await agentReply(env, key.privateKeyPem, { answer: 'Applied exactly once.' });
    const uid = await dovecot.append(raw, { folder: s.folder });

    const r = await post(s, hermesBody('status', ctx));
    expect('cut' in r, `the poll that applies the reply must be cut by the kill; it answered ${JSON.stringify(r).slice(0, 600)}`).toBe(true);
    await died(p1);
    expect(quickCheck(s.store)).toBe('ok');
    expect(
      readStore(s.store, (db) => [db.tasks.get(first.id)!.state, db.ledger.ofTask(first.id).length, db.replies.ofTask(first.id).length, db.mailbox.state(s.folder).lastUid]),
    ).toEqual(['WORKING', 0, 0, 0]);

    const p2 = await startBridgeProcess(s.cfg.configPath);
    const done = await afterChange(s, p2, first.id, ctx, 'COMPLETED');
    expect(done.status.state).toBe('TASK_STATE_COMPLETED');
    expect(unfence(shown(done))).toBe('[UNTRUSTED — grok reply, verify before acting]\nApplied exactly once.');
    for (let i = 0; i < 3; i++) expect((await answered(s, hermesBody('status', ctx))).artifacts).toHaveLength(1);
    expect(quickCheck(s.store)).toBe('ok');
    await p2.stop();
    const after = readStore(s.store, (db) => ({
      ledger: db.ledger.ofTask(first.id).map((l) => [l.source, l.verdict]),
      replyRows: db.replies.ofTask(first.id).length,
      completed: db.events.of(first.id).filter((e) => e.toState === 'COMPLETED').length,
      replies: db.messages.history(first.id).filter((m) => m.kind === 'reply').length,
    }));
    const validity = String(await dovecot.uidValidity(s.folder));
    expect(after).toEqual({ ledger: [[`imap:${s.folder}:${validity}:${uid}`, 'applied:done']], replyRows: 1, completed: 1, replies: 1 });
    expect(s.receiver.distinctIds()).toHaveLength(1);
    summary.add(
      '(c) SIGKILL while-applying-reply',
      'the applying poll was cut; the store (quick_check ok) had no ledger row, no artifact, task WORKING (the transaction rolled back, watermark unmoved); after restart the reply was applied once: 1 ledger row applied:done, 1 artifact, 1 COMPLETED transition, 1 reply message; 1 webhook-id; quick_check ok',
    );
  });
});
