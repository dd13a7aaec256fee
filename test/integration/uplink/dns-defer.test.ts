/**
 * A DKIM key lookup that fails temporarily for one agent (gate 7: the message is deferred, judged
 * again later, refused 24 h after arrival) holds back neither the other agents' replies nor the
 * mail after it (attack review 6, F3: it ended the check, so one agent's DNS outage held every
 * reply of every agent and told every caller the mailbox was unreachable). A Maildir, two agents,
 * a DNS stub that times out for one of them, and the bridge's injected clock: no sleeps.
 */
import { mkdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type App } from '../../../src/app.js';
import { loadConfig } from '../../../src/config/config.js';
import type { CheckSummary } from '../../../src/core/mail-check.js';
import { DEFER_FIRST_WAIT_MS, deferralsOf } from '../../../src/core/deferrals.js';
import { TEMPORARY_RETRY_MS } from '../../../src/core/judge.js';
import { buildReplyMail, dkimTxtName, generateDkimKey } from '../../../src/demo/reply-mail.js';
import { createLogger } from '../../../src/log.js';
import type { DnsResolver } from '../../../src/uplink/dkim.js';
import { deliverToMaildir } from '../../../src/uplink/maildir-mailbox.js';
import { makeConfigDir, type ConfigDir } from '../../helpers/config-dir.js';
import { startDovecot, type DovecotHandle } from '../../helpers/dovecot.js';
import { forged, imapRig, rigPerSuite } from '../../helpers/mailbox-rigs.js';

const PROVIDER = { mxHost: 'mx1.messagingengine.com', authservId: 'mx1.messagingengine.com', fromHost: 'mail.x.example', fromIp: '192.0.2.25' };
const AGENTS = {
  alpha: { name: 'alpha', tag: 'ALPHA', address: 'agent@alpha.example', domain: 'alpha.example', key: generateDkimKey() },
  beta: { name: 'beta', tag: 'BETA', address: 'agent@beta.example', domain: 'beta.example', key: generateDkimKey() },
};
type Agent = (typeof AGENTS)['alpha'];

/** Two agents' DNS: alpha's key lookup times out while `alphaDown`; each lookup of it is counted. */
function dns(): { resolver: DnsResolver; alphaDown: boolean; alphaAsked: number } {
  const d = {
    alphaDown: true,
    alphaAsked: 0,
    resolver: ((qname: string, rrtype: string) => {
      const q = qname.toLowerCase().replace(/\.$/, '');
      for (const a of Object.values(AGENTS)) {
        if (q !== dkimTxtName('s1', a.domain) || rrtype !== 'TXT') continue;
        if (a === AGENTS.alpha) {
          d.alphaAsked++;
          if (d.alphaDown) return Promise.reject(Object.assign(new Error('queryTxt ETIMEOUT'), { code: 'ETIMEOUT' }));
        }
        return Promise.resolve([a.key.publicKeyTxt.match(/.{1,255}/g)!]);
      }
      return Promise.reject(Object.assign(new Error('queryTxt ENOTFOUND'), { code: 'ENOTFOUND' }));
    }) as DnsResolver,
  };
  return d;
}

let dir: ConfigDir | undefined;
let app: App | undefined;
afterEach(async () => {
  await app?.close();
  if (dir) rmSync(dir.dir, { recursive: true, force: true });
  app = dir = undefined;
});

async function bridge(resolver: DnsResolver, now: () => number, mailbox = ''): Promise<{ app: App; folder: string }> {
  dir = makeConfigDir('');
  const folder = join(dir.dir, 'Maildir');
  for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(folder, sub), { recursive: true });
  const agent = (a: Agent): string =>
    `[[agents]]\nname = "${a.name}"\naddress = "${a.address}"\n[agents.webhook]\nurl = "http://127.0.0.1:9/hook"\nauth = "both"\nbearer_file = "webhook-bearer"\nsecret_file = "webhook-secret"\n`;
  writeFileSync(
    dir.configPath,
    `[server]\nlisten = "127.0.0.1:0"\nbearer_file = "bearer"\n[store]\npath = "state/bridge.sqlite"\n[mailbox]\nkind = "maildir"\naddress = "me@bridge.test"\ncheck_interval_s = 3600\n${mailbox}[mailbox.maildir]\npath = "${folder}"\n` +
      agent(AGENTS.alpha) +
      agent(AGENTS.beta),
  );
  app = await startApp(loadConfig(dir.configPath), { log: createLogger('silent'), dkimResolver: resolver, now });
  await app.bridge.idle();
  return { app, folder };
}

/** A task of `a` awaiting its reply (its webhook accepted the dispatch), as the store holds one. */
function workingTask(a: App, agent: Agent, at: number): { id: string; token: string } {
  const id = randomUUID();
  const token = randomBytes(16).toString('hex');
  const deadlineAt = at + 7 * 86_400_000;
  a.bridge.ctx.store.tx((db) => {
    db.tasks.insert({ id, agent: agent.name, contextId: `ctx-${id}`, state: 'WORKING', stateReason: 'dispatched', failedBy: null, turn: 1, caller: 'a2a:test', createdAt: at, updatedAt: at, deadlineAt });
    db.turns.insert({ taskId: id, turn: 1, ask: 'q', replyToken: token, deadlineAt, dispatchId: `msg_${id}`, envelope: Buffer.from('{}'), dispatchState: 'accepted', nextAttemptAt: null, acceptedAt: at, replyStatus: null, replyText: null, replyLedgerId: null, repliedAt: null, createdAt: at });
  });
  return { id, token };
}

const reply = (agent: Agent, task: { id: string; token: string }): Promise<Buffer> =>
  buildReplyMail({ from: `Agent <${agent.address}>`, to: 'me@bridge.test', subject: `Re: [${agent.tag}:${task.id}]`, token: task.token, status: 'done', answer: 'the answer', dkim: { domain: agent.domain, selector: 's1', privateKeyPem: agent.key.privateKeyPem }, provider: PROVIDER });

/** Delivers the mails in order, one second apart, arriving at `at` onwards (the file's mtime). */
async function deliver(folder: string, raws: Buffer[], at: number): Promise<void> {
  for (const [i, raw] of raws.entries()) {
    const path = await deliverToMaildir(folder, raw);
    utimesSync(path, new Date(at + i * 1000), new Date(at + i * 1000));
  }
}

describe('one agent\'s DKIM key lookup failing temporarily (gate 7 defers)', () => {
  it('holds back no other agent\'s reply; the deferred reply is tried again after its backoff and applied once DNS answers', async () => {
    const d = dns();
    let now = Date.now();
    const { app: a, folder } = await bridge(d.resolver, () => now);
    const alpha = workingTask(a, AGENTS.alpha, now - 60_000);
    const beta = workingTask(a, AGENTS.beta, now - 60_000);
    await deliver(folder, [await reply(AGENTS.alpha, alpha), await reply(AGENTS.beta, beta)], now - 30_000);
    const store = a.bridge.ctx.store;
    const state = (): string | undefined => store.tasks.get(alpha.id)?.state;

    const first = await a.bridge.checkNow();
    // Was: ok false, "a reply could not be authenticated yet…", beta's reply not judged.
    expect(first).toMatchObject<Partial<CheckSummary>>({ ok: true, fetched: 1, verdicts: { 'applied:done': 1 }, deferred: 1, more: false });
    expect(first.error).toBeUndefined();
    expect(store.tasks.get(beta.id)!.state).toBe('COMPLETED');
    expect(state()).toBe('WORKING');
    expect(store.ledger.ofTask(alpha.id)).toEqual([]); // no verdict yet: it stays a candidate
    const folderState = store.mailbox.state(a.bridge.ctx.mailbox.folder);
    expect(folderState).toMatchObject({ lastError: null, errorSince: null });
    expect(folderState.lastResult).toContain('1 waiting for an agent\'s DKIM key');
    expect(d.alphaAsked).toBe(1);

    // Within its backoff the deferred reply is not read again, nor its key asked.
    const second = await a.bridge.checkNow();
    expect(second).toMatchObject<Partial<CheckSummary>>({ ok: true, fetched: 0, deferred: 0, held: 1 });
    expect(d.alphaAsked).toBe(1);

    // Past it, and with alpha's DNS back, it is judged and applied.
    now += DEFER_FIRST_WAIT_MS;
    d.alphaDown = false;
    const third = await a.bridge.checkNow();
    expect(third).toMatchObject<Partial<CheckSummary>>({ ok: true, fetched: 1, verdicts: { 'applied:done': 1 }, deferred: 0, held: 0 });
    expect(state()).toBe('COMPLETED');
  });

  it('tries one deferrable message of an agent (one failing selector) a backoff, the rest held as long, and refuses each for good on its first try 24 h after arrival', async () => {
    const d = dns();
    let now = Date.now();
    const { app: a, folder } = await bridge(d.resolver, () => now);
    const tasks = [workingTask(a, AGENTS.alpha, now - 60_000), workingTask(a, AGENTS.alpha, now - 60_000), workingTask(a, AGENTS.alpha, now - 60_000)];
    const beta = workingTask(a, AGENTS.beta, now - 60_000);
    await deliver(folder, [...(await Promise.all(tasks.map((t) => reply(AGENTS.alpha, t)))), await reply(AGENTS.beta, beta)], now - 30_000);
    const store = a.bridge.ctx.store;

    const first = await a.bridge.checkNow();
    // alpha's first defers; its other two are left unread for a later check; beta's is applied.
    expect(first).toMatchObject<Partial<CheckSummary>>({ ok: true, fetched: 1, verdicts: { 'applied:done': 1 }, deferred: 1, held: 2 });
    expect(d.alphaAsked).toBe(1);

    const second = await a.bridge.checkNow();
    // The first waits out its backoff, and the two held wait as long: all three handed out unread.
    // (Was: the next one tried, deferred, each check: one lookup timeout a check, not a backoff.)
    expect(second).toMatchObject<Partial<CheckSummary>>({ ok: true, fetched: 0, deferred: 0, held: 3, bytes: 0 });
    expect(d.alphaAsked).toBe(1);

    // 24 h after arrival each gets its verdict on its next try (a refusal holds nothing back):
    // every input leaves a trace.
    now += TEMPORARY_RETRY_MS;
    const last = await a.bridge.checkNow();
    expect(last).toMatchObject<Partial<CheckSummary>>({ ok: true, fetched: 3, verdicts: { 'auth:dkim-unverified': 3 }, deferred: 0, held: 0 });
    expect(tasks.map((t) => store.ledger.ofTask(t.id).map((r) => r.verdict))).toEqual([['auth:dkim-unverified'], ['auth:dkim-unverified'], ['auth:dkim-unverified']]);
    expect(d.alphaAsked).toBe(4);
  });
});

describe('a deferred reply deleted from the mailbox', () => {
  it('is forgotten by the next check that lists the mailbox whole: its task no longer says a reply waits', async () => {
    const d = dns();
    let now = Date.now();
    const { app: a, folder } = await bridge(d.resolver, () => now);
    const alpha = workingTask(a, AGENTS.alpha, now - 60_000);
    await deliver(folder, [await reply(AGENTS.alpha, alpha)], now - 30_000);
    expect(await a.bridge.checkNow()).toMatchObject<Partial<CheckSummary>>({ ok: true, deferred: 1 });
    expect(deferralsOf(a.bridge.ctx.store).taskWaitsSince(alpha.id)).not.toBeNull();
    for (const sub of ['new', 'cur']) rmSync(join(folder, sub), { recursive: true, force: true });
    for (const sub of ['new', 'cur']) mkdirSync(join(folder, sub));
    now += 1000;
    // Was: remembered until a restart (attack review 7, F3), the task's status saying a reply could not be authenticated yet.
    expect(await a.bridge.checkNow()).toMatchObject<Partial<CheckSummary>>({ ok: true, deferred: 0, held: 0, more: false });
    expect(deferralsOf(a.bridge.ctx.store).taskWaitsSince(alpha.id)).toBeNull();
    expect(deferralsOf(a.bridge.ctx.store).size).toBe(0);
  });
});

describe('an agent signing under a selector whose key lookup fails, and under one that works', () => {
  it('leaves unread only its mail under the failing selector: its reply under the working one is applied on the first check', async () => {
    let asked = 0;
    const resolver = ((qname: string, rrtype: string) => {
      const q = qname.toLowerCase().replace(/\.$/, '');
      if (rrtype === 'TXT' && q === dkimTxtName('s0', AGENTS.alpha.domain)) {
        asked++;
        return Promise.reject(Object.assign(new Error('queryTxt ETIMEOUT'), { code: 'ETIMEOUT' }));
      }
      if (rrtype === 'TXT' && q === dkimTxtName('s1', AGENTS.alpha.domain)) return Promise.resolve([AGENTS.alpha.key.publicKeyTxt.match(/.{1,255}/g)!]);
      return Promise.reject(Object.assign(new Error('queryTxt ENOTFOUND'), { code: 'ENOTFOUND' }));
    }) as DnsResolver;
    const now = Date.now();
    const { app: a, folder } = await bridge(resolver, () => now);
    const queued = workingTask(a, AGENTS.alpha, now - 60_000);
    const genuine = workingTask(a, AGENTS.alpha, now - 60_000);
    const underS0 = (): Promise<Buffer> =>
      buildReplyMail({ from: `Agent <${AGENTS.alpha.address}>`, to: 'me@bridge.test', subject: `Re: [${AGENTS.alpha.tag}:${queued.id}]`, token: queued.token, status: 'done', answer: 'x', dkim: { domain: AGENTS.alpha.domain, selector: 's0', privateKeyPem: AGENTS.alpha.key.privateKeyPem }, provider: PROVIDER });
    await deliver(folder, [await underS0(), await underS0(), await underS0(), await reply(AGENTS.alpha, genuine)], now - 30_000);

    const first = await a.bridge.checkNow();
    // Held by agent, the reply waited behind the queue under s0 until that mail was 24 h old (attack review 7, F1).
    expect(first).toMatchObject<Partial<CheckSummary>>({ ok: true, verdicts: { 'applied:done': 1 }, deferred: 1, held: 2 });
    expect(a.bridge.ctx.store.tasks.get(genuine.id)!.state).toBe('COMPLETED');
    expect(asked).toBe(1);
  });

  it('reads a reply behind more held mail than the prefix budget on the first check; the next check hands the held mail out unread (attack review 7, F2)', async () => {
    let asked = 0;
    const resolver = ((qname: string, rrtype: string) => {
      const q = qname.toLowerCase().replace(/\.$/, '');
      if (rrtype === 'TXT' && q === dkimTxtName('s0', AGENTS.alpha.domain)) {
        asked++;
        return Promise.reject(Object.assign(new Error('queryTxt ETIMEOUT'), { code: 'ETIMEOUT' }));
      }
      if (rrtype === 'TXT' && q === dkimTxtName('s1', AGENTS.alpha.domain)) return Promise.resolve([AGENTS.alpha.key.publicKeyTxt.match(/.{1,255}/g)!]);
      return Promise.reject(Object.assign(new Error('queryTxt ENOTFOUND'), { code: 'ENOTFOUND' }));
    }) as DnsResolver;
    const now = Date.now();
    const budget = 100; // the least max_prefixes_per_check allows
    const { app: a, folder } = await bridge(resolver, () => now, `max_prefixes_per_check = ${budget}\n`);
    const queued = workingTask(a, AGENTS.alpha, now - 60_000);
    const genuine = workingTask(a, AGENTS.alpha, now - 60_000);
    const underS0 = (i: number): Promise<Buffer> =>
      buildReplyMail({ from: `Agent <${AGENTS.alpha.address}>`, to: 'me@bridge.test', subject: `Re: [${AGENTS.alpha.tag}:${queued.id}]`, token: queued.token, status: 'done', answer: `x${i}`, dkim: { domain: AGENTS.alpha.domain, selector: 's0', privateKeyPem: AGENTS.alpha.key.privateKeyPem }, provider: PROVIDER });
    const flood = budget + 50;
    await deliver(folder, [...(await Promise.all(Array.from({ length: flood }, (_, i) => underS0(i)))), await reply(AGENTS.alpha, genuine)], now - 3_600_000);

    const first = await a.bridge.checkNow();
    // Was: the 100 prefixes went to the first 100 of the queue (one deferred, 99 held), each check
    // again, and the reply was never read.
    expect(first).toMatchObject<Partial<CheckSummary>>({ ok: true, verdicts: { 'applied:done': 1 }, deferred: 1, held: flood - 1, more: false });
    expect(a.bridge.ctx.store.tasks.get(genuine.id)!.state).toBe('COMPLETED');
    expect(asked).toBe(1);

    // Within the backoff the whole queue is handed out unread: no byte read, no lookup; it is all still waiting.
    const second = await a.bridge.checkNow();
    expect(second).toMatchObject<Partial<CheckSummary>>({ ok: true, fetched: 0, deferred: 0, held: flood, bytes: 0, more: false });
    expect(asked).toBe(1);
    expect(a.bridge.ctx.store.ledger.ofTask(queued.id)).toEqual([]);
    expect(deferralsOf(a.bridge.ctx.store).size).toBe(flood);
  });
});

describe('a deferred reply on IMAP (Dovecot)', () => {
  let dovecot: DovecotHandle;
  beforeAll(async () => {
    dovecot = await startDovecot();
  });
  afterAll(async () => {
    await dovecot?.stop();
  });
  const rig = rigPerSuite(() => imapRig(dovecot, 'DNSDEFER'));

  it('the watermark stays before it while the mail after it is recorded, and passes everything once it is applied', async () => {
    const t = await rig().newTask('Job during a DNS outage');
    const store = rig().bridge.ctx.store;
    const folder = rig().bridge.ctx.mailbox.folder;
    const working = rig().bridge.ctx.dkimResolver;
    rig().bridge.ctx.dkimResolver = () => Promise.reject(Object.assign(new Error('queryTxt ETIMEOUT'), { code: 'ETIMEOUT' }));
    const uids = await rig().deliver([await rig().reply(t.envelope, 'Done despite DNS.'), await forged(t.envelope, 1)]);

    const first = await rig().bridge.checkNow();
    expect(first).toMatchObject<Partial<CheckSummary>>({ ok: true, fetched: 1, onHeaders: 1, verdicts: { 'auth:dmarc-fail': 1 }, deferred: 1 });
    expect(store.mailbox.state(folder)).toMatchObject({ lastUid: uids[0]! - 1, lastError: null });

    // Within its backoff it is handed out unread (no FETCH, no prefix of the budget), and the watermark stays before it.
    const between = await rig().bridge.checkNow();
    expect(between).toMatchObject<Partial<CheckSummary>>({ ok: true, fetched: 0, deferred: 0, held: 1, bytes: 0 });
    expect(store.mailbox.state(folder).lastUid).toBe(uids[0]! - 1);

    rig().bridge.ctx.dkimResolver = working;
    rig().advance!(DEFER_FIRST_WAIT_MS);
    const second = await rig().bridge.checkNow();
    expect(second).toMatchObject<Partial<CheckSummary>>({ ok: true, fetched: 1, verdicts: { 'applied:done': 1 }, deferred: 0 });
    expect(store.tasks.get(t.id)!.state).toBe('COMPLETED');
    expect(store.mailbox.state(folder).lastUid).toBe(uids[1]);
  });
});
