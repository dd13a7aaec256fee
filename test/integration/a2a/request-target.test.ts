/**
 * The request target as the server reads it (src/a2a/request-target.ts, src/a2a/server.ts): a
 * target the URL parser refuses is a 400, not a failure of the server; an absolute-form target
 * names the host in place of the Host header (RFC 9112 §3.2.2), so it must be a loopback one too;
 * the Host header itself is a loopback uri-host and port (RFC 9110 §7.2).
 * Sent with node:http, which writes the target as given.
 */
import { once } from 'node:events';
import { request } from 'node:http';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { useHarness } from '../../helpers/bridge-harness.js';
import { TEST_BEARER } from '../../helpers/config-dir.js';

const suite = useHarness({ mailboxToml: 'check_interval_s = 3600' });

/** One request with the target `path` as written, the Host `localhost` and the bearer; its status and body. */
function raw(method: string, path: string, host = 'localhost'): Promise<{ status: number; body: string }> {
  const u = new URL(suite.h.endpoint);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, method, path, headers: { host, authorization: `Bearer ${TEST_BEARER}`, 'content-type': 'application/json' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end(method === 'POST' ? JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} }) : undefined);
  });
}

describe('the Host header', () => {
  it('is uri-host [":" port] of a loopback name: brackets only around an IPv6 literal, a port at most 65535', async () => {
    for (const host of ['localhost', 'LOCALHOST:8080', '127.0.0.1', '127.0.0.1:65535', '[::1]', '[::1]:8765', '[0:0:0:0:0:0:0:1]']) {
      expect([host, (await raw('GET', '/health', host)).status]).toEqual([host, 200]);
    }
    for (const host of ['[localhost]', '[127.0.0.1]:80', 'localhost:65536', 'localhost:99999999999999999999', 'evil.example', '[::ffff:127.0.0.1]', 'localhost.']) {
      expect([host, (await raw('GET', '/health', host)).status]).toEqual([host, 403]);
    }
  });
});

/** Sends `head` as written on a new socket; the status code of the answer. */
async function rawHead(head: string): Promise<number> {
  const u = new URL(suite.h.endpoint);
  const s = connect(Number(u.port), u.hostname);
  await once(s, 'connect');
  let text = '';
  s.setEncoding('utf8');
  s.on('data', (d: string) => (text += d));
  s.write(head);
  await once(s, 'end');
  s.destroy();
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
}

describe('more than one Host header', () => {
  it('is a 400 (RFC 9112 §3.2), whatever the second names; one Host line is served', async () => {
    expect(await rawHead('GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n')).toBe(200);
    expect(await rawHead('GET /health HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\nConnection: close\r\n\r\n')).toBe(400);
    expect(await rawHead('GET /health HTTP/1.1\r\nHost: localhost\r\nhost: localhost\r\nConnection: close\r\n\r\n')).toBe(400);
  });
});

describe('the request target', () => {
  it('a target the URL parser refuses is 400 (the server answers the next request as before)', async () => {
    for (const target of ['http://[::1/health', 'http://127.0.0.1:99999/agents/grok']) {
      const r = await raw('GET', target);
      expect(r.status).toBe(400);
      expect((JSON.parse(r.body) as { error: string }).error).toMatch(/request target is not a valid URL/);
    }
    expect((await raw('GET', '/health')).status).toBe(200);
  });

  it('an absolute-form target is served only when its host is a loopback name, as the Host header must be', async () => {
    expect((await raw('GET', 'http://evil.example/health')).status).toBe(403);
    expect((await raw('POST', 'http://evil.example/agents/grok')).status).toBe(403);
    expect((await raw('GET', 'http://localhost/health')).status).toBe(200);
    const listed = await raw('POST', `http://127.0.0.1:${new URL(suite.h.endpoint).port}/agents/grok`);
    expect(listed.status).toBe(200);
    expect(JSON.parse(listed.body)).toMatchObject({ jsonrpc: '2.0', id: 1, result: { tasks: [] } });
  });
});
