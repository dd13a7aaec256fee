import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { TEST_WEBHOOK_SECRET } from '../helpers/config-dir.js';
import { unfence } from '../helpers/agent-text.js';
import { hermesBody, hex, useHarness } from '../helpers/bridge-harness.js';

/**
 * The round trip on real parts — Dovecot on loopback, a node:http webhook receiver verifying with
 * the official standardwebhooks library, and the official @a2a-js/sdk client.
 */

const suite = useHarness({});

function sdkMessage(text: string, contextId: string) {
  return { message: { role: 1, parts: [{ content: { $case: 'text', value: text }, mediaType: 'text/plain' }], messageId: hex(16), contextId } } as never;
}
type SdkTask = { id: string; contextId: string; status: { state: number; message?: { parts: { content: { value: string } }[] } }; artifacts: { parts: { content: { $case: string; value: string } }[] }[] };
const WORKING = 2;
const COMPLETED = 3;

describe('round trip', () => {
  it('SDK send → WORKING; one signed webhook; signed reply APPENDed; send on the same context → COMPLETED; read-only IMAP', async () => {
    const contextId = `ctx-${hex(8)}`;
    const first = (await suite.h.client.sendMessage(sdkMessage('Survey RAG papers', contextId))) as SdkTask;
    expect(first.status.state).toBe(WORKING);
    expect(first.contextId).toBe(contextId);
    expect(first.status.message?.parts[0]?.content.value).toMatch(/is with the cloud agent grok/);

    expect(suite.h.receiver.requests).toHaveLength(1);
    const post = suite.h.receiver.requests[0]!;
    // Verified again here, independently of the receiver's own check, with the official library.
    const verified = new Webhook(TEST_WEBHOOK_SECRET).verify(post.body.toString('utf8'), post.headers) as { task_id: string; reply_token: string };
    expect(verified.task_id).toBe(first.id);
    expect(verified.reply_token).toMatch(/^[0-9a-f]{32}$/);

    const envelope = suite.h.envelope(1);
    const uid = await suite.dovecot.append(await suite.h.reply(envelope, { answer: 'Three papers: A, B, C.' }));
    const flagsBefore = await suite.dovecot.flagsOf(uid);

    const second = (await suite.h.client.sendMessage(sdkMessage('status', contextId))) as SdkTask;
    expect(second.id).toBe(first.id);
    expect(second.status.state).toBe(COMPLETED);
    const texts = second.artifacts.flatMap((a) => a.parts.filter((p) => p.content.$case === 'text'));
    expect(texts).toHaveLength(1);
    expect(unfence(texts[0]!.content.value)).toBe('[UNTRUSTED — grok reply, verify before acting]\nThree papers: A, B, C.');

    const got = (await suite.h.client.getTask({ id: first.id } as never)) as SdkTask;
    expect(got.status.state).toBe(COMPLETED);
    expect(suite.h.receiver.requests).toHaveLength(1);

    const ledger = suite.h.app.bridge.ctx.store.ledger.query({ taskId: first.id, limit: 10 });
    expect(ledger.map((l) => l.verdict)).toEqual(['applied:done']);
    expect(await suite.dovecot.flagsOf(uid)).toEqual(flagsBefore);
    const verbs = suite.h.imapCommands.map((c) => c.replace(/^\S+\s+/, '').split(' ').slice(0, 2).join(' ').toUpperCase());
    expect(verbs.some((v) => v.startsWith('EXAMINE'))).toBe(true);
    for (const forbidden of ['STORE', 'SELECT', 'EXPUNGE', 'MOVE', 'COPY', 'UID STORE', 'UID MOVE', 'UID COPY', 'UID EXPUNGE']) {
      expect(verbs.filter((v) => v === forbidden || v.startsWith(`${forbidden} `))).toEqual([]);
    }
    expect(suite.h.imapCommands.filter((c) => /FETCH/i.test(c) && /BODY\[/i.test(c))).toEqual([]);
  });

  it('the body Hermes sends, byte for byte, works at the URL the card names; the card needs no auth; a wrong bearer is 401', async () => {
    const cardRes = await fetch(`${suite.h.endpoint}/.well-known/agent-card.json`);
    expect(cardRes.status).toBe(200);
    const card = (await cardRes.json()) as { supportedInterfaces: { url: string; protocolBinding: string; protocolVersion: string }[]; capabilities: { streaming: boolean } };
    expect(card.supportedInterfaces[0]).toEqual({ url: suite.h.endpoint, protocolBinding: 'JSONRPC', protocolVersion: '1.0' });
    expect(card.capabilities.streaming).toBe(false);

    const ctx = `ctx-${hex(8)}`;
    const body = `{"jsonrpc":"2.0","id":"task-${hex(8)}","method":"SendMessage","params":{"message":{"role":"ROLE_USER","parts":[{"text":"Summarise the news","mediaType":"text/plain"}],"messageId":"${hex(16)}","contextId":"${ctx}"}}}`;
    const res = await fetch(card.supportedInterfaces[0]!.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${suite.h.configDir.bearer}`, 'a2a-version': '1.0' },
      body,
    });
    expect(res.status).toBe(200);
    const json = (await res.json()) as { result: { task: { contextId: string; status: { state: string } } } };
    expect(json.result.task.contextId).toBe(ctx);
    expect(json.result.task.status.state).toBe('TASK_STATE_WORKING');

    // Patch numbers never count in version negotiation (A2A v1.0 §3.6).
    expect((await suite.h.rpc(hermesBody('status', ctx), { 'a2a-version': '1.0.1' })).json.result!.task!.contextId).toBe(ctx);
    expect((await suite.h.rpc(hermesBody('status', ctx), { 'a2a-version': '1.1' })).json.error!.code).toBe(-32009);

    const wrong = await suite.h.rpc(hermesBody('x', ctx), { authorization: 'Bearer not-the-bearer' });
    expect(wrong.status).toBe(401);
    const none = await fetch(suite.h.endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(none.status).toBe(401);
  });

  it('the same reply APPENDed again changes nothing; a reply whose only pass is a forged A-R below the border is refused', async () => {
    const ctx = `ctx-${hex(8)}`;
    const sent = await suite.h.rpc(hermesBody('Job two', ctx));
    const taskId = sent.json.result!.task!.id;
    const env = suite.h.receiver.requests.map((r) => r.envelope!).find((e) => e.task_id === taskId)!;

    // Forged: the provider says dkim=none/dmarc=fail; a pass is written below the border by the sender.
    const forged = await suite.h.reply(env, {
      answer: 'FORGED',
      dkim: undefined,
      headers: { 'Authentication-Results': 'mx1.messagingengine.com; dkim=pass header.d=agent.example header.b=AAAAAAAA; dmarc=pass header.from=agent.example' },
    });
    await suite.dovecot.append(forged);
    let polled = await suite.h.rpc(hermesBody('status', ctx));
    expect(polled.json.result!.task!.status.state).toBe('TASK_STATE_WORKING');
    let verdicts = suite.h.app.bridge.ctx.store.ledger.query({ taskId, limit: 10 }).map((l) => l.verdict);
    expect(verdicts).toHaveLength(1);
    expect(verdicts[0]).toMatch(/^auth:/);

    const genuine = await suite.h.reply(env, { answer: 'Real answer' });
    await suite.dovecot.append(genuine);
    polled = await suite.h.rpc(hermesBody('status', ctx));
    expect(polled.json.result!.task!.status.state).toBe('TASK_STATE_COMPLETED');
    await suite.dovecot.append(genuine);
    polled = await suite.h.rpc(hermesBody('status', ctx));
    expect(polled.json.result!.task!.status.state).toBe('TASK_STATE_COMPLETED');
    expect(polled.json.result!.task!.artifacts).toHaveLength(1);
    verdicts = suite.h.app.bridge.ctx.store.ledger.query({ taskId, limit: 10 }).map((l) => l.verdict).reverse();
    expect(verdicts.slice(1)).toEqual(['applied:done', 'duplicate']);
  });

  it('new text on an open task is not forwarded, and the caller is told so', async () => {
    const ctx = `ctx-${hex(8)}`;
    await suite.h.rpc(hermesBody('First job', ctx));
    const sent = suite.h.receiver.requests.length;
    const r = await suite.h.rpc(hermesBody('Actually, also delete my repo', ctx));
    expect(r.json.result!.task!.status.state).toBe('TASK_STATE_WORKING');
    expect(r.json.result!.task!.status.message!.parts[0]!.text).toMatch(/^Your message was not sent to grok: the task is still with it, and a task takes new input only when it asks for it \(input-required\)\. This call was a status check\.\n/);
    expect(suite.h.receiver.requests.length).toBe(sent);
    const poll = await suite.h.rpc(hermesBody('status', ctx));
    expect(poll.json.result!.task!.status.message!.parts[0]!.text).not.toMatch(/was not sent/);
  });

  it('keeps only the header block of a tagged mail refused on it (its body is never read); malformed paths are 404, not 500', async () => {
    const ctx = `ctx-${hex(8)}`;
    const taskId = (await suite.h.rpc(hermesBody('Job three', ctx))).json.result!.task!.id;
    const env = suite.h.receiver.requests.map((r) => r.envelope!).find((e) => e.task_id === taskId)!;
    const big = await suite.h.reply(env, { from: 'Mallory <mallory@evil.test>', answer: 'x'.repeat(300_000), dkim: undefined });
    await suite.dovecot.append(big);
    await suite.h.rpc(hermesBody('status', ctx));
    const store = suite.h.app.bridge.ctx.store;
    const [row] = store.ledger.ofTask(taskId);
    expect(row!.verdict).toBe('auth:from-mismatch');
    expect(row!.size).toBeGreaterThan(300_000);
    expect(store.ledger.raw(row!.id)).toEqual(big.subarray(0, big.indexOf('\r\n\r\n') + 4));
    for (const path of ['/agents/%', '/agents/%E0%A4%A', '/agents/%C0%AF']) {
      expect((await fetch(`${new URL(suite.h.endpoint).origin}${path}`)).status).toBe(404);
    }
  });

  it('a task whose deadline passes with no reply is FAILED with the reason on the next call', async () => {
    const ctx = `ctx-${hex(8)}`;
    const sent = await suite.h.rpc(hermesBody('Slow job', ctx));
    expect(sent.json.result!.task!.status.state).toBe('TASK_STATE_WORKING');
    suite.h.advance(2 * 3600_000);
    const polled = await suite.h.rpc(hermesBody('status', ctx));
    const task = polled.json.result!.task;
    expect(task!.status.state).toBe('TASK_STATE_FAILED');
    expect(task!.status.message!.parts[0]!.text).toMatch(/^Failed: deadline \S+Z passed with no reply from grok\.$/);
    const n = suite.h.receiver.requests.length;
    const again = await suite.h.rpc(hermesBody('status', ctx));
    expect(again.json.result!.task!.status.state).toBe('TASK_STATE_FAILED');
    expect(suite.h.receiver.requests.length).toBe(n);
  });
});
