import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MockAgent } from 'undici';
import { describe, expect, it } from 'vitest';
import { backoffMs, classifyStatus, mayHaveReachedAgent, parseRetryAfter, postWebhook } from '../../../src/downlink/deliver.js';

describe('classifyStatus', () => {
  it.each([
    [200, 'accepted'], [202, 'accepted'], [204, 'accepted'],
    [301, 'failed'], [302, 'failed'], [400, 'failed'], [401, 'failed'], [404, 'failed'],
    [408, 'retry'], [429, 'retry'], [500, 'retry'], [503, 'retry'],
    [410, 'gone'],
  ] as const)('%i → %s', (status, outcome) => expect(classifyStatus(status)).toBe(outcome));
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-11-30T12:00:00Z');
  it('reads seconds and HTTP dates, clamps, and ignores junk', () => {
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter('Mon, 30 Nov 2026 12:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Mon, 30 Nov 2026 11:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('99999', now)).toBe(3_600_000);
    expect(parseRetryAfter('soon', now)).toBeNull();
    expect(parseRetryAfter(undefined, now)).toBeNull();
  });
});

describe('backoffMs', () => {
  it('doubles from 2 s with jitter in [50 %, 100 %], caps at 5 min and honours a longer retry-after', () => {
    expect(backoffMs(1, null, () => 0)).toBe(1000);
    expect(backoffMs(1, null, () => 0.999999)).toBe(2000);
    expect(backoffMs(3, null, () => 0.999999)).toBe(8000);
    expect(backoffMs(20, null, () => 0.999999)).toBe(300_000);
    expect(backoffMs(1, 60_000, () => 0.5)).toBe(60_000);
    expect(backoffMs(5, 1000, () => 0.999999)).toBe(32_000);
  });
});

describe('postWebhook (undici MockAgent)', () => {
  const url = new URL('https://agent.example/hook');
  function agent(): MockAgent {
    const a = new MockAgent();
    a.disableNetConnect();
    return a;
  }

  it('sends the exact body and headers and reports 202 as accepted', async () => {
    const a = agent();
    let seen: { body: unknown; headers: unknown } | undefined;
    a.get('https://agent.example').intercept({ path: '/hook', method: 'POST' }).reply(202, (opts) => {
      seen = { body: opts.body, headers: opts.headers };
      return 'ok';
    });
    const r = await postWebhook(url, { 'x-test': '1' }, Buffer.from('{"a":1}'), 1000, a);
    expect(r).toEqual({ outcome: 'accepted', httpStatus: 202, error: null, retryAfterMs: null });
    expect(Buffer.from(seen!.body as Uint8Array).toString()).toBe('{"a":1}');
  });

  it('reports 503 with retry-after as retry with the delay, and 404 as failed', async () => {
    const a = agent();
    const pool = a.get('https://agent.example');
    pool.intercept({ path: '/hook', method: 'POST' }).reply(503, 'busy', { headers: { 'retry-after': '7' } });
    pool.intercept({ path: '/hook', method: 'POST' }).reply(404, 'no');
    expect(await postWebhook(url, {}, Buffer.from('{}'), 1000, a)).toMatchObject({ outcome: 'retry', httpStatus: 503, retryAfterMs: 7000 });
    expect(await postWebhook(url, {}, Buffer.from('{}'), 1000, a)).toMatchObject({ outcome: 'failed', httpStatus: 404, error: 'HTTP 404' });
  });

  it("keeps the status when the receiver's body stalls after it: a 200 is accepted, a 503 retried as a 503 (attack review 4)", async () => {
    // A real receiver on loopback that sends its head and one chunk, then never ends the body.
    const server = createServer((req, res) => {
      req.resume();
      res.writeHead(req.url === '/busy' ? 503 : 200);
      res.write('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      expect(await postWebhook(new URL(`${base}/hook`), {}, Buffer.from('{}'), 300)).toEqual({ outcome: 'accepted', httpStatus: 200, error: null, retryAfterMs: null });
      expect(await postWebhook(new URL(`${base}/busy`), {}, Buffer.from('{}'), 300)).toMatchObject({ outcome: 'retry', httpStatus: 503, error: 'HTTP 503' });
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('turns a network error into retry without throwing', async () => {
    const a = agent();
    a.get('https://agent.example').intercept({ path: '/hook', method: 'POST' }).replyWithError(new Error('boom'));
    const r = await postWebhook(url, {}, Buffer.from('{}'), 1000, a);
    expect(r.outcome).toBe('retry');
    expect(r.httpStatus).toBeNull();
    expect(r.error).toMatch(/network error/);
  });
});

describe('mayHaveReachedAgent (whether a cancel notice has a job to stop: src/core/cancel.ts)', () => {
  it('no for a refused connection and a non-2xx answer; yes for a 2xx and a timeout after the request went out', async () => {
    // A port nothing listens on: refused before anything was sent.
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const { port } = closed.address() as AddressInfo;
    await new Promise((r) => closed.close(r));
    const refused = await postWebhook(new URL(`http://127.0.0.1:${port}/hook`), {}, Buffer.from('{}'), 2000);
    expect([refused.error, mayHaveReachedAgent(refused)]).toEqual(['network error: ECONNREFUSED', false]);
    // A server that reads the request and never answers: the job may be with the agent.
    const mute = createServer(() => {});
    await new Promise<void>((r) => mute.listen(0, '127.0.0.1', r));
    try {
      const hung = await postWebhook(new URL(`http://127.0.0.1:${(mute.address() as AddressInfo).port}/hook`), {}, Buffer.from('{}'), 200);
      expect([hung.outcome, hung.error, mayHaveReachedAgent(hung)]).toEqual(['retry', 'timed out after 200 ms', true]);
    } finally {
      mute.closeAllConnections();
      await new Promise((r) => mute.close(r));
    }
    expect(mayHaveReachedAgent({ outcome: 'retry', httpStatus: 503, error: 'HTTP 503' })).toBe(false);
    expect(mayHaveReachedAgent({ outcome: 'failed', httpStatus: 404, error: 'HTTP 404' })).toBe(false);
    expect(mayHaveReachedAgent({ outcome: 'accepted', httpStatus: 202, error: null })).toBe(true);
  });
});
