import { once, type EventEmitter } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { startApp } from '../../../src/app.js';
import { loadConfig } from '../../../src/config/config.js';
import { createServiceLogger } from '../../../src/log.js';
import { hermesBody, hex, useHarness } from '../../helpers/bridge-harness.js';
import { TEST_BEARER, TEST_WEBHOOK_BEARER, TEST_WEBHOOK_SECRET } from '../../helpers/config-dir.js';
import type { RpcAnswer, V1SendResult } from '../../helpers/rpc-json.js';


const suite = useHarness({});

describe('GET /metrics', () => {
  it('parses as Prometheus text format and counts tasks, verdicts, attempts and checks', async () => {
    const ctx = `ctx-${hex(8)}`;
    const task = (await suite.h.rpc(hermesBody('metrics job', ctx))).json.result!.task;
    const env = suite.h.receiver.requests.map((r) => r.envelope!).find((e) => e.task_id === task!.id)!;
    await suite.dovecot.append(await suite.h.reply(env));
    expect((await suite.h.rpc(hermesBody('status', ctx))).json.result!.task!.status.state).toBe('TASK_STATE_COMPLETED');

    const res = await fetch(`${new URL(suite.h.endpoint).origin}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const families = parsePrometheusTextFormat(await res.text()) as { name: string; type: string; metrics: { value?: string; labels?: Record<string, string>; buckets?: Record<string, string>; count?: string }[] }[];
    const family = (name: string) => families.find((f) => f.name === name)!;
    const value = (name: string, labels: Record<string, string>) =>
      Number(family(name).metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))?.value);
    expect(value('a2a_mailbridge_tasks', { state: 'COMPLETED' })).toBeGreaterThanOrEqual(1);
    expect(family('a2a_mailbridge_tasks').metrics).toHaveLength(7);
    expect(value('a2a_mailbridge_verdicts_total', { verdict: 'applied:done' })).toBeGreaterThanOrEqual(1);
    expect(value('a2a_mailbridge_webhook_attempts_total', { outcome: 'accepted', kind: 'dispatch' })).toBeGreaterThanOrEqual(1);
    expect(value('a2a_mailbridge_mailbox_checks_total', { result: 'ok' })).toBeGreaterThanOrEqual(1);
    expect(family('a2a_mailbridge_mailbox_check_duration_seconds').type).toBe('HISTOGRAM');
    expect(Number(family('a2a_mailbridge_reply_promotion_delay_seconds').metrics[0]!.count)).toBeGreaterThanOrEqual(1);
    expect(value('a2a_mailbridge_ledger_messages', { verdict: 'applied:done' })).toBeGreaterThanOrEqual(1);
  });
});

describe('logs', () => {
  it('a full round trip logged at debug level to the rotating file holds no secret', async () => {
    // A second bridge on the same parts, logging everything to a file through the service logger.
    const config = loadConfig(suite.h.configDir.configPath);
    const file = join(suite.h.configDir.dir, 'logs', 'mailbridge.log');
    const log = await createServiceLogger({ level: 'trace', file, maxBytes: 1024 * 1024, maxFiles: 3 });
    const app = await startApp({ ...config, store: { path: join(suite.h.configDir.dir, 'state', 'logs.sqlite') } }, { log });
    await app.bridge.idle(); // the start-up check, so the poll below runs a check of its own
    const endpoint = app.server.endpoint(config.agents[0]!);
    const ctx = `ctx-${hex(8)}`;
    const post = (text: string) =>
      fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_BEARER}` }, body: JSON.stringify(hermesBody(text, ctx)) }).then((r) => r.json() as Promise<RpcAnswer<V1SendResult>>);
    const task = (await post('log job')).result!.task!;
    const env = suite.h.receiver.requests.map((r) => r.envelope!).find((e) => e.task_id === task.id)!;
    await suite.dovecot.append(await suite.h.reply(env));
    expect((await post('status')).result!.task!.status.state).toBe('TASK_STATE_COMPLETED');
    await app.close();
    // The file transport writes from a worker thread: end it and wait until it has closed.
    const stream = (log as unknown as Record<symbol, NodeJS.WritableStream>)[pino.symbols.streamSym]!;
    const closed = once(stream as unknown as EventEmitter, 'close');
    stream.end();
    await closed;
    const dir = join(suite.h.configDir.dir, 'logs');
    const text = readdirSync(dir).map((f) => readFileSync(join(dir, f), 'utf8')).join('');
    expect(text).toContain('"webhook result"');
    expect(text).toContain('"reply applied"');
    for (const secret of [TEST_BEARER, TEST_WEBHOOK_SECRET, TEST_WEBHOOK_SECRET.slice(6), TEST_WEBHOOK_BEARER, suite.dovecot.password, env.reply_token]) {
      expect(text.includes(secret), `log holds a secret: ${secret.slice(0, 6)}…`).toBe(false);
    }
  });
});
