import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { TEST_BEARER } from '../../helpers/config-dir.js';
import { hermesBody, hex, useHarness } from '../../helpers/bridge-harness.js';

/**
 * Bad input at the door: a body that is not UTF-8 or is compressed changes nothing, and the per-agent caps (open
 * tasks, jobs sent per minute) refuse a runaway caller with an error that names the limit and
 * when to retry — atomically, so concurrent calls cannot slip past a cap.
 */
const suite = useHarness({ agentToml: 'max_open_tasks = 3', webhookToml: 'max_per_minute = 4' });

function counts(): { tasks: number; messages: number; turns: number } {
  const { tasks, messages, turns } = suite.h.app.bridge.ctx.store.stats.rowCounts();
  return { tasks, messages, turns };
}

const send = (text: string) => suite.h.rpc(hermesBody(text, `ctx-${hex(8)}`));

describe('the door', () => {
  it('a body that is not valid UTF-8 gets -32700 over JSON-RPC and 400 over HTTP+JSON, and stores and dispatches nothing', async () => {
    const before = counts();
    const hooks = suite.h.receiver.requests.length;
    const json = JSON.stringify(hermesBody('caf\u0000', `ctx-${hex(8)}`));
    // The text "caf" followed by a byte that is not UTF-8 (0xE9 is é in latin1).
    const bytes = Buffer.from(json.replace('\\u0000', '\u0001'), 'utf8');
    bytes[bytes.indexOf(0x01)] = 0xe9;
    const res = await fetch(suite.h.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_BEARER}`, 'a2a-version': '1.0' },
      body: bytes,
    });
    const body = (await res.json()) as { id: unknown; error: { code: number; message: string } };
    expect(res.status).toBe(200);
    expect(body.id).toBeNull();
    expect(body.error.code).toBe(-32700);
    expect(body.error.message).toMatch(/not valid UTF-8/);
    expect(counts()).toEqual(before);
    expect(suite.h.receiver.requests.length).toBe(hooks);
    // HTTP+JSON refuses the same bytes (the same check), in AIP-193 form: 400 INVALID_ARGUMENT
    const params = JSON.stringify(hermesBody('caf\u0000', `ctx-${hex(8)}`).params);
    const restBytes = Buffer.from(params.replace('\\u0000', '\u0001'), 'utf8');
    restBytes[restBytes.indexOf(0x01)] = 0xe9;
    const rest = await fetch(`${suite.h.endpoint}/message:send`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_BEARER}`, 'a2a-version': '1.0' },
      body: restBytes,
    });
    const restBody = (await rest.json()) as { error: { code: number; status: string; message: string } };
    expect([rest.status, restBody.error.code, restBody.error.status]).toEqual([400, 400, 'INVALID_ARGUMENT']);
    expect(restBody.error.message).toMatch(/not valid UTF-8/);
    expect(counts()).toEqual(before);
    expect(suite.h.receiver.requests.length).toBe(hooks);
  });

  it('a compressed body (Content-Encoding other than identity) gets 415 naming the coding, with accept-encoding: identity, over JSON-RPC and HTTP+JSON; nothing is stored or dispatched', async () => {
    const before = counts();
    const hooks = suite.h.receiver.requests.length;
    const gzipped = gzipSync(JSON.stringify(hermesBody('A compressed job', `ctx-${hex(8)}`)));
    const post = (url: string, coding: string, body: Buffer | string = gzipped) =>
      fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-encoding': coding, authorization: `Bearer ${TEST_BEARER}`, 'a2a-version': '1.0' },
        body,
      });
    // JSON-RPC: the error body of an unsupported Content-Type (A2A v1.0 §9.5), not -32700
    const rpc = await post(suite.h.endpoint, 'gzip');
    expect(rpc.status).toBe(415);
    expect(rpc.headers.get('accept-encoding')).toBe('identity');
    expect(rpc.headers.get('content-type')).toMatch(/^application\/json/);
    const rpcBody = (await rpc.json()) as { id: unknown; error: { code: number; message: string; data: { reason: string }[] } };
    expect(rpcBody).toMatchObject({ id: null, error: { code: -32005, data: [{ reason: 'CONTENT_TYPE_NOT_SUPPORTED' }] } });
    expect(rpcBody.error.message).toBe('Content-Encoding gzip is not supported; send the body uncompressed');
    // the caller's coding is cut to 80 characters
    const long = (await (await post(suite.h.endpoint, `br, ${'x'.repeat(200)}`)).json()) as { error: { message: string } };
    expect(long.error.message).toBe(`Content-Encoding br, ${'x'.repeat(76)} is not supported; send the body uncompressed`);
    // HTTP+JSON: the same error in AIP-193 form
    const rest = await post(`${suite.h.endpoint}/message:send`, 'deflate', '{}');
    expect(rest.status).toBe(415);
    expect(rest.headers.get('accept-encoding')).toBe('identity');
    const restBody = (await rest.json()) as { error: { code: number; message: string; details: { reason: string }[] } };
    expect(restBody).toMatchObject({ error: { code: 415, details: [{ reason: 'CONTENT_TYPE_NOT_SUPPORTED' }] } });
    expect(restBody.error.message).toBe('Content-Encoding deflate is not supported; send the body uncompressed');
    expect(counts()).toEqual(before);
    expect(suite.h.receiver.requests.length).toBe(hooks);
    // identity (any case) is no coding at all: served as before
    const plain = await post(suite.h.endpoint, 'Identity', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} }));
    expect(plain.status).toBe(200);
    expect(((await plain.json()) as { result?: unknown }).result).toBeDefined();
  });

  it('a request refused before its body is read (401, 415) closes the connection instead of reading a body that may be huge; identityidentity is a coding', async () => {
    const { hostname, port, pathname } = new URL(suite.h.endpoint);
    /** Sends the head of a POST that declares 100 MiB and 64 KiB of it; resolves with the answer's head once the server closes. */
    const refused = (headers: string): Promise<string> =>
      new Promise((resolve, reject) => {
        const socket = connect(Number(port), hostname, () => {
          socket.write(`POST ${pathname} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Length: ${100 * 1024 * 1024}\r\n${headers}\r\n`);
          socket.write(Buffer.alloc(64 * 1024, 0x20));
        });
        let answer = '';
        socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
        socket.on('error', reject);
        // The server ends the connection: no more of the 100 MiB is ever asked for.
        socket.on('close', () => resolve(answer.slice(0, answer.indexOf('\r\n\r\n'))));
      });
    const wrongBearer = await refused('Content-Type: application/json\r\nAuthorization: Bearer nope\r\n');
    expect(wrongBearer).toMatch(/^HTTP\/1\.1 401 /);
    expect(wrongBearer).toMatch(/\r\nconnection: close/i);
    const gzip = await refused(`Content-Type: application/json\r\nContent-Encoding: gzip\r\nAuthorization: Bearer ${TEST_BEARER}\r\n`);
    expect(gzip).toMatch(/^HTTP\/1\.1 415 /);
    expect(gzip).toMatch(/\r\nconnection: close/i);
    const type = await refused(`Content-Type: text/plain\r\nAuthorization: Bearer ${TEST_BEARER}\r\n`);
    expect(type).toMatch(/^HTTP\/1\.1 415 /);
    // Two codings' names run together are not identity (RFC 9110 §8.4: a comma-separated list).
    const doubled = await fetch(suite.h.endpoint, { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': 'identityidentity', authorization: `Bearer ${TEST_BEARER}` }, body: '{}' });
    expect(doubled.status).toBe(415);
  });

  it('any answer given before the body arrived whole closes the connection without reading the rest (403, 404, 405, a REST GET with a body); an answer after a whole body keeps it', async () => {
    const { hostname, port, pathname } = new URL(suite.h.endpoint);
    /** Sends `head` declaring 100 MiB and 64 KiB of it; resolves with the answer's head once the server closes. */
    const answered = (head: string): Promise<string> =>
      new Promise((resolve, reject) => {
        const socket = connect(Number(port), hostname, () => {
          socket.write(`${head}Content-Length: ${100 * 1024 * 1024}\r\n\r\n`);
          socket.write(Buffer.alloc(64 * 1024, 0x20));
        });
        let answer = '';
        socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
        socket.on('error', reject);
        // Without the rule the server drained the rest after answering, and this never came.
        socket.on('close', () => resolve(answer.slice(0, answer.indexOf('\r\n\r\n'))));
      });
    const host = `Host: 127.0.0.1:${port}\r\n`;
    const cases: [string, string][] = [
      ['403', `POST ${pathname} HTTP/1.1\r\nHost: evil.example\r\n`],
      ['404', `POST /nope HTTP/1.1\r\n${host}`],
      ['404', `POST /agents/nobody HTTP/1.1\r\n${host}`],
      ['405', `POST /health HTTP/1.1\r\n${host}`],
      ['405', `POST /.well-known/agent-card.json HTTP/1.1\r\n${host}`],
      ['404', `GET ${pathname}/tasks/00000000-0000-4000-8000-000000000000 HTTP/1.1\r\n${host}Authorization: Bearer ${TEST_BEARER}\r\n`],
    ];
    for (const [status, head] of cases) {
      const answer = await answered(head);
      expect(answer, head).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
      expect(answer, head).toMatch(/\r\nconnection: close/i);
    }
    // Keep-alive stays for an answer with no body to wait for, and for one after the whole body was read:
    // both pipelined requests are answered on one connection.
    const rpc = `POST ${pathname} HTTP/1.1\r\n${host}Authorization: Bearer ${TEST_BEARER}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`;
    for (const first of [`GET /health HTTP/1.1\r\n${host}\r\n`, rpc]) {
      const both = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(port), hostname, () => socket.write(`${first}GET /health HTTP/1.1\r\n${host}Connection: close\r\n\r\n`));
        let answer = '';
        socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
        socket.on('error', reject);
        socket.on('close', () => resolve(answer));
      });
      expect(both.match(/HTTP\/1\.1 200 /g), first).toHaveLength(2);
      expect(both.split('\r\n\r\n')[0], first).not.toMatch(/\r\nconnection: close/i);
    }
  });

  it('a request with no content is not refused for the headers that describe content (RFC 9110 §15.5.16: 415 is for content in a format not supported); content in a coding still is, unread', async () => {
    const { hostname, port, pathname } = new URL(suite.h.endpoint);
    const unknown = `${pathname}/tasks/00000000-0000-4000-8000-000000000000:cancel`;
    /** Sends one request as written and resolves with the answer's head and body once the server closes. */
    const exchange = (head: string, body = ''): Promise<{ head: string; body: string }> =>
      new Promise((resolve, reject) => {
        const socket = connect(Number(port), hostname, () => socket.write(`${head}Host: 127.0.0.1:${port}\r\nConnection: close\r\nAuthorization: Bearer ${TEST_BEARER}\r\n\r\n${body}`));
        let answer = '';
        socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
        socket.on('error', reject);
        socket.on('close', () => {
          const head = answer.slice(0, answer.indexOf('\r\n\r\n'));
          let rest = answer.slice(head.length + 4);
          if (!/\r\ntransfer-encoding: chunked/i.test(head)) return resolve({ head, body: rest });
          let body = '';
          for (let size = parseInt(rest, 16); size > 0; size = parseInt(rest, 16)) {
            const start = rest.indexOf('\r\n') + 2;
            body += rest.slice(start, start + size);
            rest = rest.slice(start + size + 2);
          }
          resolve({ head, body });
        });
      });
    // HTTP+JSON CancelTask needs no body: with Content-Length: 0, or with no length at all (RFC 9112 §6.3: no content), the call is
    // served whatever Content-Encoding or Content-Type says (here: the task is not found).
    for (const framing of ['Content-Length: 0\r\n', '']) {
      for (const header of ['Content-Encoding: gzip\r\n', 'Content-Type: text/plain\r\n']) {
        const r = await exchange(`POST ${unknown} HTTP/1.1\r\n${framing}${header}`);
        expect(r.head, `${framing}${header}`).toMatch(/^HTTP\/1\.1 404 /);
        expect(JSON.parse(r.body)).toMatchObject({ error: { code: 404, details: [{ reason: 'TASK_NOT_FOUND' }] } });
      }
    }
    // JSON-RPC with no content: what is wrong is that there is no request (-32700), not its coding.
    const rpc = await exchange(`POST ${pathname} HTTP/1.1\r\nContent-Length: 0\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n`);
    expect(rpc.head).toMatch(/^HTTP\/1\.1 200 /);
    expect(JSON.parse(rpc.body)).toMatchObject({ id: null, error: { code: -32700 } });
    // Content in a coding, even of unknown length (chunked), is still 415, and the connection closes without reading it.
    const chunked = await exchange(`POST ${unknown} HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n`, '10\r\n');
    expect(chunked.head).toMatch(/^HTTP\/1\.1 415 /);
    expect(chunked.head).toMatch(/\r\nconnection: close/i);
    expect(chunked.head).toMatch(/\r\naccept-encoding: identity/i);
    // A transfer coding other than chunked (node:http takes the chunks off, not the gzip) is 501, unread (RFC 9112 §6.1; attack review 9).
    for (const path of [pathname, unknown]) {
      const gzipped = await exchange(`POST ${path} HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\nContent-Type: application/json\r\n`, '10\r\n');
      expect(gzipped.head).toMatch(/^HTTP\/1\.1 501 /);
      expect(gzipped.head).toMatch(/\r\nconnection: close/i);
    }
  });

  it('caps open tasks per agent atomically, names the limit and when to retry, and stores nothing beyond it', async () => {
    const before = counts();
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => send(`Concurrent job ${i}`)));
    const created = results.filter((r) => r.json.result?.task);
    const refused = results.filter((r) => r.json.error);
    expect(created).toHaveLength(3);
    expect(refused).toHaveLength(5);
    for (const r of refused) {
      const error = r.json.error!;
      const data = error.data as unknown[];
      expect(error.code).toBe(-31001);
      // The operator's commands, for this config (the harness's is not the default: --config).
      const cli = `a2a-mailbridge --config ${suite.h.configDir.configPath}`;
      expect(error.message).toContain(`Cancel tasks you no longer need (CancelTask; on the bridge's machine ${cli} tasks --agent grok --state open lists them and ${cli} cancel <id> cancels one), or retry when one finishes: `);
      expect(error.message).toMatch(/^grok already has 3 open tasks, the limit \(agents\.max_open_tasks = 3\); no new task was created\. Cancel tasks .* or retry when one finishes: the earliest deadline is \S+Z, in \d+ s\.$/);
      expect(data[0]).toMatchObject({ reason: 'LIMIT_REACHED', domain: 'a2a-mailbridge', metadata: { limit: 'agents.max_open_tasks', value: '3' } });
      expect(data[1]).toEqual({ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: expect.stringMatching(/^\d+s$/) as unknown });
    }
    expect(counts()).toEqual({ tasks: before.tasks + 3, messages: before.messages + 3, turns: before.turns + 3 });
    expect(suite.h.receiver.requests.length).toBe(3);

    // A canceled task frees its place.
    const first = created[0]!.json.result!.task!.id;
    expect((await suite.h.rpc({ jsonrpc: '2.0', id: 1, method: 'CancelTask', params: { id: first } })).json.result?.status?.state).toBe('TASK_STATE_CANCELED');
    expect((await send('After a cancel')).json.result?.task?.status?.state).toBe('TASK_STATE_WORKING');
  });

  it('caps jobs sent to the agent per rolling minute, and lets the next one through once the minute has passed', async () => {
    // Four dispatches so far in this minute (the test above): one more place is freed, the cap is 4.
    const open = suite.h.app.bridge.ctx.store.tasks.rows({ states: ['WORKING'], limit: 1 })[0]!;
    await suite.h.rpc({ jsonrpc: '2.0', id: 2, method: 'CancelTask', params: { id: open.id } });
    const before = counts();
    const hooks = suite.h.receiver.requests.length;
    const r = await send('One job too many');
    const error = r.json.error!;
    expect(error.code).toBe(-31001);
    const m = /^grok was sent 4 jobs in the last 60 s, the limit \(agents\.webhook\.max_per_minute = 4\); nothing was stored or sent\. Retry in (\d+) s \(after (\S+)\)\.$/.exec(error.message);
    expect(m, error.message).not.toBeNull();
    const wait = Number(m![1]);
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(61);
    expect((error.data as { retryDelay?: string }[])[1]?.retryDelay).toBe(`${wait}s`);
    expect(counts()).toEqual(before);
    expect(suite.h.receiver.requests.length).toBe(hooks);

    suite.h.advance(wait * 1000);
    expect((await send('Once the minute has passed')).json.result?.task?.status?.state).toBe('TASK_STATE_WORKING');
  });
});
