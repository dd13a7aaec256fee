import { createHmac, randomBytes } from 'node:crypto';
import { Resolver } from 'node:dns/promises';
import { dkimVerify } from 'mailauth';
import { request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { encodeEnvelope, replyInstructions, subjectTag, type Envelope } from '../../../src/downlink/envelope.js';
import { type CloudAgent, type CloudAgentOptions, startCloudAgent } from '../../../src/demo/cloud-agent.js';
import { type DnsZone, startDnsZone } from '../../../src/demo/dns-zone.js';
import { dkimTxtName, generateDkimKey } from '../../../src/demo/reply-mail.js';

const SECRET = `whsec_${Buffer.from('cloud-agent-test-secret-32-bytes!!').toString('base64')}`;
const BEARER = 'agent-bearer-0123456789abcdef';
const DOMAIN = 'agent.example';
const SELECTOR = 'demo';

const key = generateDkimKey();
let zone: DnsZone;
let agent: CloudAgent | undefined;
let delivered: Buffer[];

beforeAll(async () => {
  zone = await startDnsZone([{ name: dkimTxtName(SELECTOR, DOMAIN), type: 'TXT', data: key.publicKeyTxt }]);
});
afterAll(async () => {
  await zone.close();
});
afterEach(async () => {
  await agent?.close();
  agent = undefined;
});

async function start(over: Partial<CloudAgentOptions> = {}): Promise<CloudAgent> {
  delivered = [];
  agent = await startCloudAgent({
    address: `agent@${DOMAIN}`,
    dkim: { domain: DOMAIN, selector: SELECTOR, privateKeyPem: key.privateKeyPem },
    signingSecret: SECRET,
    bearer: BEARER,
    deliver: (raw) => {
      delivered.push(raw);
      return Promise.resolve();
    },
    ...over,
  });
  return agent;
}

function envelope(over: Partial<Envelope> = {}): Envelope {
  const token = randomBytes(16).toString('hex');
  const tag = subjectTag('GROK', 'task-42');
  return {
    v: 1,
    task_id: 'task-42',
    turn: 1,
    reply_token: token,
    from: 'a2a-mailbridge',
    ask: 'Compare three SQLite WAL settings',
    thread: [],
    constraints: replyInstructions({ replyTo: 'me@bridge.test', from: 'agent@agent.example', subjectTag: tag, token, deadline: '2030-01-01T00:00:00Z' }),
    deadline: '2030-01-01T00:00:00Z',
    reply_to: 'me@bridge.test',
    subject_tag: tag,
    ...over,
  };
}

/** Standard Webhooks signature, computed here without the library (spec: HMAC-SHA256 over `${id}.${ts}.${body}`). */
function sign(id: string, ts: number, body: Buffer, secret = SECRET): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${ts}.`).update(body).digest('base64')}`;
}

async function post(a: CloudAgent, body: Buffer, o: { id?: string; secret?: string; bearer?: string; ts?: number } = {}) {
  const id = o.id ?? `msg_${randomBytes(8).toString('hex')}`;
  const ts = o.ts ?? Math.floor(Date.now() / 1000);
  const res = await request(a.url, {
    method: 'POST',
    body,
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${o.bearer ?? BEARER}`,
      'webhook-id': id,
      'webhook-timestamp': String(ts),
      'webhook-signature': sign(id, ts, body, o.secret),
    },
  });
  const text = await res.body.text();
  return { status: res.statusCode, text };
}

/** mailauth's resolver over the loopback zone, as the bridge's local verifier does it. */
function zoneResolver() {
  const r = new Resolver({ timeout: 1000, tries: 1 });
  r.setServers([zone.address]);
  return (name: string, type: string) => r.resolve(name, type as 'TXT');
}

describe('startCloudAgent', () => {
  it('accepts a correctly signed envelope with 202 and delivers one signed, stamped reply', async () => {
    const a = await start();
    expect(a.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/hook$/);
    const e = envelope();
    const res = await post(a, encodeEnvelope(e));
    expect(res.status).toBe(202);
    await a.idle();
    expect(delivered).toHaveLength(1);
    expect(a.replies).toEqual(delivered);
    expect(a.received).toHaveLength(1);
    expect(a.received[0]!.envelope).toEqual(e);

    const mail = delivered[0]!.toString('utf8');
    const head = mail.split('\r\n\r\n')[0]!.replace(/\r\n[ \t]+/g, ' ');
    expect(head).toMatch(/^Authentication-Results: mx1\.messagingengine\.com; dkim=pass .*header\.d=agent\.example/);
    expect(head).toMatch(/\r\nSubject: Re: Compare three SQLite WAL settings \[GROK:task-42\]\r\n/);
    expect(head).toMatch(/\r\nTo: me@bridge\.test\r\n/);
    expect(head).toMatch(/\r\nFrom: Demo Cloud Agent <agent@agent\.example>\r\n/);
    expect(mail).toContain(`\r\n\r\nreply_token: ${e.reply_token}\r\nstatus: done\r\n---\r\nResearch result for: Compare three SQLite WAL settings\r\n`);

    const verified = await dkimVerify(delivered[0]!, { resolver: zoneResolver() });
    expect(verified.results[0]!.status.result).toBe('pass');
    expect(verified.results[0]!.status.aligned).toBe(DOMAIN);
  });

  it('answers 401 to a wrong signature and delivers nothing', async () => {
    const a = await start();
    const wrongSecret = `whsec_${Buffer.from('some-other-secret-of-32-bytes!!!').toString('base64')}`;
    const res = await post(a, encodeEnvelope(envelope()), { secret: wrongSecret });
    expect(res.status).toBe(401);
    await a.idle();
    expect(delivered).toHaveLength(0);
    expect(a.received).toHaveLength(0);
  });

  it('answers 401 to a stale timestamp and to a wrong bearer', async () => {
    const a = await start();
    const body = encodeEnvelope(envelope());
    expect((await post(a, body, { ts: Math.floor(Date.now() / 1000) - 6 * 60 })).status).toBe(401);
    expect((await post(a, body, { bearer: 'not-the-bearer' })).status).toBe(401);
    await a.idle();
    expect(delivered).toHaveLength(0);
  });

  it('replies once to the same webhook-id delivered twice (a retry)', async () => {
    const a = await start();
    const body = encodeEnvelope(envelope());
    expect((await post(a, body, { id: 'msg_retry_1' })).status).toBe(202);
    expect((await post(a, body, { id: 'msg_retry_1', ts: Math.floor(Date.now() / 1000) + 1 })).status).toBe(202);
    await a.idle();
    expect(delivered).toHaveLength(1);
    expect(a.received.map((r) => [r.id, r.duplicate])).toEqual([
      ['msg_retry_1', false],
      ['msg_retry_1', true],
    ]);
  });

  it('answers 400 to a signed body that is not JSON or not an envelope', async () => {
    const a = await start();
    expect((await post(a, Buffer.from('not json'))).status).toBe(400);
    const res = await post(a, Buffer.from(JSON.stringify({ ...envelope(), reply_token: 'ABC' })));
    expect(res.status).toBe(400);
    expect(res.text).toMatch(/reply_token/);
    await a.idle();
    expect(delivered).toHaveLength(0);
  });

  it('answers 413 over the body cap', async () => {
    const a = await start({ maxBodyBytes: 2048 });
    const res = await post(a, encodeEnvelope(envelope({ ask: 'x'.repeat(4096) })));
    expect(res.status).toBe(413);
  });

  it('works with a bearer only, deduping by reply_token; a cancel notice gets no reply', async () => {
    const a = await start({ signingSecret: undefined });
    const e = envelope();
    const send = (body: Buffer) =>
      request(a.url, { method: 'POST', body, headers: { authorization: `Bearer ${BEARER}` } }).then(async (r) => {
        await r.body.dump();
        return r.statusCode;
      });
    expect(await send(encodeEnvelope(e))).toBe(202);
    expect(await send(encodeEnvelope(e))).toBe(202);
    expect(await send(encodeEnvelope(envelope({ cancel: true })))).toBe(202);
    await a.idle();
    expect(delivered).toHaveLength(1);
    expect(a.received[0]!.id).toBe(`token:${e.reply_token}`);
  });

  it('uses the pluggable answer and delay; null means no reply; a failing deliver is recorded', async () => {
    const a = await start({
      replyDelayMs: 50,
      answer: (e) => Promise.resolve(e.turn === 2 ? null : { status: 'input-required', text: 'Which region?' }),
    });
    const t0 = Date.now();
    await post(a, encodeEnvelope(envelope()));
    await post(a, encodeEnvelope(envelope({ turn: 2 })));
    await a.idle();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(45);
    expect(delivered).toHaveLength(1);
    expect(delivered[0]!.toString()).toMatch(/\r\nstatus: input-required\r\n---\r\nWhich region\?\r\n/);

    await a.close();
    agent = await startCloudAgent({
      address: `agent@${DOMAIN}`,
      dkim: { domain: DOMAIN, selector: SELECTOR, privateKeyPem: key.privateKeyPem },
      signingSecret: SECRET,
      deliver: () => Promise.reject(new Error('mailbox down')),
    });
    await post(agent, encodeEnvelope(envelope()));
    await agent.idle();
    expect(agent.replies).toHaveLength(0);
    expect(agent.errors.map((e) => e.message)).toEqual(['mailbox down']);
  });

  it('refuses misuse at start: no auth at all, or a secret with a trailing newline', async () => {
    const base = { address: `agent@${DOMAIN}`, dkim: { domain: DOMAIN, selector: SELECTOR, privateKeyPem: key.privateKeyPem }, deliver: async () => {} };
    await expect(startCloudAgent(base)).rejects.toThrow(TypeError);
    await expect(startCloudAgent({ ...base, signingSecret: `${SECRET}\n` })).rejects.toThrow(TypeError);
  });

  it('close() cancels a reply still waiting for its delay', async () => {
    const a = await start({ replyDelayMs: 60_000 });
    expect((await post(a, encodeEnvelope(envelope()))).status).toBe(202);
    const t0 = Date.now();
    await a.close();
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(delivered).toHaveLength(0);
  });
});
