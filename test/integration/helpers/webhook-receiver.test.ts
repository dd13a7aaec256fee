import { createHmac } from 'node:crypto';
import { Agent, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { startWebhookReceiver, type WebhookReceiver, type WebhookReceiverOptions } from '../../helpers/webhook-receiver.js';

const SECRET = `whsec_${Buffer.from('receiver-test-secret-of-32-bytes').toString('base64')}`;
const OTHER_SECRET = `whsec_${Buffer.from('a-different-secret-of-32-bytes!!').toString('base64')}`;
const BEARER = 'receiver-bearer-0123456789';
const BODY = Buffer.from(JSON.stringify({ v: 1, task_id: 't-1', reply_token: 'ab'.repeat(16), ask: 'héllo' }));

/**
 * The expected signature, built from the Standard Webhooks spec with node:crypto only (never with
 * the library under test): base64 HMAC-SHA256, keyed by the base64 part of the secret, over
 * `${id}.${timestamp}.${body}`, sent as `v1,<sig>`.
 */
function specSignature(secret: string, id: string, ts: number, body: Buffer): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return `v1,${createHmac('sha256', key).update(Buffer.concat([Buffer.from(`${id}.${ts}.`), body])).digest('base64')}`;
}

let receiver: WebhookReceiver | undefined;
afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
});

async function start(o: Partial<WebhookReceiverOptions> = {}): Promise<WebhookReceiver> {
  receiver = await startWebhookReceiver({ secret: SECRET, bearer: BEARER, ...o });
  return receiver;
}

function send(
  r: WebhookReceiver,
  o: { id?: string; ts?: number; secret?: string; bearer?: string | null; body?: Buffer; signedBody?: Buffer; dispatcher?: Agent } = {},
) {
  const id = o.id ?? 'msg_1';
  const ts = o.ts ?? Math.floor(Date.now() / 1000);
  const body = o.body ?? BODY;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(ts),
    'webhook-signature': specSignature(o.secret ?? SECRET, id, ts, o.signedBody ?? body),
  };
  if (o.bearer !== null) headers.authorization = `Bearer ${o.bearer ?? BEARER}`;
  return request(r.url, { method: 'POST', body, headers, ...(o.dispatcher ? { dispatcher: o.dispatcher } : {}) });
}

describe('startWebhookReceiver', () => {
  it('accepts a request signed per the spec (independently of the library) and records it exactly', async () => {
    const r = await start();
    const ts = Math.floor(Date.now() / 1000);
    const res = await send(r, { id: 'msg_ok', ts });
    await res.body.dump();
    expect(res.statusCode).toBe(202);
    expect(r.requests).toHaveLength(1);
    const rec = r.requests[0]!;
    expect(rec).toMatchObject({
      n: 1,
      method: 'POST',
      path: '/hook',
      id: 'msg_ok',
      timestamp: String(ts),
      signature: specSignature(SECRET, 'msg_ok', ts, BODY),
      bearer: BEARER,
      verified: true,
      failure: null,
    });
    expect(rec.body.equals(BODY)).toBe(true);
    expect(rec.envelope).toMatchObject({ task_id: 't-1', ask: 'héllo' });
  });

  it('rejects a signature made with another secret: 401, recorded as not verified', async () => {
    const r = await start();
    const res = await send(r, { secret: OTHER_SECRET });
    await res.body.dump();
    expect(res.statusCode).toBe(401);
    expect(r.requests[0]).toMatchObject({ verified: false, failure: 'signature: No matching signature found' });
  });

  it('rejects a signature over other bytes, a stale timestamp, a missing header and a wrong bearer', async () => {
    const r = await start();
    const statuses: number[] = [];
    for (const o of [
      { signedBody: Buffer.from(`${BODY.toString()} `) },
      { ts: Math.floor(Date.now() / 1000) - 301 },
      { bearer: 'wrong-bearer' },
      { bearer: null },
    ]) {
      const res = await send(r, o);
      await res.body.dump();
      statuses.push(res.statusCode);
    }
    const res = await request(r.url, { method: 'POST', body: BODY, headers: { authorization: `Bearer ${BEARER}` } });
    await res.body.dump();
    statuses.push(res.statusCode);
    expect(statuses).toEqual([401, 401, 401, 401, 401]);
    expect(r.requests.map((q) => q.failure)).toEqual([
      'signature: No matching signature found',
      'signature: Message timestamp too old',
      'bearer: mismatch',
      'bearer: missing',
      'signature: Missing required headers',
    ]);
  });

  it('follows a scripted plan (503 with retry-after, then 202 after a delay) and counts one distinct id', async () => {
    const r = await start({
      respond: (_req, n) => (n === 1 ? { status: 503, headers: { 'retry-after': '1' }, body: 'busy' } : { status: 202, delayMs: 100 }),
    });
    const first = await send(r, { id: 'msg_same' });
    expect(first.statusCode).toBe(503);
    expect(first.headers['retry-after']).toBe('1');
    expect(await first.body.text()).toBe('busy');
    const t0 = Date.now();
    const second = await send(r, { id: 'msg_same', ts: Math.floor(Date.now() / 1000) + 1 });
    await second.body.dump();
    expect(second.statusCode).toBe(202);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(90);
    expect(r.requests).toHaveLength(2);
    expect(r.distinctIds()).toEqual(['msg_same']);
  });

  it("'hang' leaves the client to its own timeout; close() still returns promptly", async () => {
    const r = await start({ respond: () => 'hang' });
    const dispatcher = new Agent({ headersTimeout: 200 });
    try {
      await expect(send(r, { dispatcher })).rejects.toMatchObject({ code: 'UND_ERR_HEADERS_TIMEOUT' });
      expect(r.requests[0]!.verified).toBe(true);
    } finally {
      await dispatcher.close();
    }
    const t0 = Date.now();
    await r.close();
    expect(Date.now() - t0).toBeLessThan(1000);
  });

  it("'reset' drops the connection after the request was read", async () => {
    const r = await start({ respond: () => 'reset' });
    await expect(send(r)).rejects.toMatchObject({ code: expect.stringMatching(/ECONNRESET|UND_ERR_SOCKET/) as unknown });
    await r.waitForRequests(1);
    expect(r.requests).toHaveLength(1);
  });

  it('answers 413 over the body cap whatever the plan', async () => {
    const r = await start({ maxBodyBytes: 64, respond: () => ({ status: 200 }) });
    const res = await send(r);
    await res.body.dump();
    expect(res.statusCode).toBe(413);
    expect(r.requests[0]).toMatchObject({ verified: false, failure: 'body over 64 bytes' });
  });

  it('refuses to start with nothing to verify', async () => {
    await expect(startWebhookReceiver({})).rejects.toThrow(TypeError);
  });
});
