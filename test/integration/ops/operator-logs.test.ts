import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type App } from '../../../src/app.js';
import { loadConfig } from '../../../src/config/config.js';
import { createLogger } from '../../../src/log.js';
import { hermesBody, hex, useHarness } from '../../helpers/bridge-harness.js';
import type { RpcAnswer, V1SendResult } from '../../helpers/rpc-json.js';
import { TEST_BEARER, TEST_WEBHOOK_BEARER, TEST_WEBHOOK_SECRET } from '../../helpers/config-dir.js';

/**
 * At the default level (info) the bridge logs what an operator needs —
 * a refused reply, a 401 and a 403, a task created and canceled, a failing webhook at warn — and
 * no content (the ask, the mail's headers) and no secret.
 */
const suite = useHarness({ respond: (req) => (req.envelope?.ask === 'please fail' ? { status: 503 } : { status: req.verified ? 202 : 401 }) });
let app: App;
const lines: Record<string, unknown>[] = [];
let endpoint: string;

beforeAll(async () => {
  const config = loadConfig(suite.h.configDir.configPath);
  const log = createLogger('info', { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
  app = await startApp({ ...config, store: { path: join(suite.h.configDir.dir, 'state', 'operator-logs.sqlite') } }, { log });
  await app.bridge.idle();
  endpoint = app.server.endpoint(config.agents[0]!);
});
afterAll(async () => {
  await app?.close();
});

const post = (body: unknown, headers: Record<string, string> = { authorization: `Bearer ${TEST_BEARER}` }) =>
  fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...headers }, body: JSON.stringify(body) });
const find = (msg: RegExp) => lines.filter((l) => msg.test(String(l.msg)));
const WARN = 40;
const INFO = 30;

describe('what serve logs at the default level', () => {
  it('401 and 403 at warn, once per minute each, with no token', async () => {
    expect((await post(hermesBody('x', 'c'), {})).status).toBe(401);
    expect((await post(hermesBody('x', 'c'), { authorization: 'Bearer not-the-bearer-123' })).status).toBe(401);
    // A DNS-rebinding style request: a foreign Host header (node:http sends it as given).
    const u = new URL(endpoint);
    const status = await new Promise<number | undefined>((resolve, reject) => {
      request({ host: u.hostname, port: u.port, path: '/health', headers: { host: 'evil.example' } }, (res) => {
        res.resume();
        resolve(res.statusCode);
      })
        .on('error', reject)
        .end();
    });
    expect(status).toBe(403);
    const unauthorized = find(/^request refused: 401/);
    expect(unauthorized).toHaveLength(1); // the second is counted, not logged
    expect(unauthorized[0]).toMatchObject({ level: WARN, status: 401, agent: 'grok', why: 'no bearer' });
    expect(find(/^request refused: 403/)[0]).toMatchObject({ level: WARN, status: 403, host: 'evil.example' });
  });

  it('a task created and canceled at info; a failing webhook at warn; the ask never', async () => {
    const ask = `the confidential plan ${hex(4)}`;
    const created = ((await (await post(hermesBody(ask, `ctx-${hex(4)}`))).json()) as RpcAnswer<V1SendResult>).result!.task!;
    expect(find(/^task created$/).at(-1)).toMatchObject({ level: INFO, task: created.id, agent: 'grok', turn: 1 });
    const failing = ((await (await post(hermesBody('please fail', `ctx-${hex(4)}`))).json()) as RpcAnswer<V1SendResult>).result!.task!;
    expect(find(/^webhook result: not accepted$/).at(-1)).toMatchObject({ level: WARN, task: failing.id, attempt: 1, outcome: 'retry', status: 503 });
    await post({ jsonrpc: '2.0', id: 1, method: 'CancelTask', params: { id: failing.id } });
    expect(find(/^task canceled$/).at(-1)).toMatchObject({ level: INFO, task: failing.id, agent: 'grok' });
    expect(JSON.stringify(lines)).not.toContain(ask);
  });

  it('a refused reply at warn with its verdict and task, never its headers', async () => {
    const ctx = `ctx-${hex(4)}`;
    const task = ((await (await post(hermesBody('a job', ctx))).json()) as RpcAnswer<V1SendResult>).result!.task!;
    const env = suite.h.receiver.requests.map((r) => r.envelope!).find((e) => e.task_id === task.id)!;
    const marker = `ZEBRA${hex(3)}`;
    await suite.dovecot.append(await suite.h.reply({ ...env, reply_token: '0'.repeat(32) }, { subject: `${marker} ${env.subject_tag}` }));
    await post(hermesBody('status', ctx));
    const refused = find(/^mail refused: bad-token/).find((l) => l.task === task.id);
    expect(refused).toMatchObject({ level: WARN, verdict: 'bad-token', agent: 'grok', ledgerId: expect.any(Number) as unknown });
    expect(String(refused!.msg)).toBe(`mail refused: bad-token; see a2a-mailbridge --config ${suite.h.app.bridge.ctx.config.file} ledger --task ${task.id}`);
    const text = JSON.stringify(lines);
    expect(text).not.toContain(marker);
    for (const secret of [TEST_BEARER, TEST_WEBHOOK_SECRET, TEST_WEBHOOK_BEARER, env.reply_token, 'not-the-bearer-123']) expect(text).not.toContain(secret);
    expect(lines.every((l) => Number(l.level) >= INFO)).toBe(true);
  });
});
