import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';
import { makeConfigDir, minimalToml, TEST_WEBHOOK_BEARER, TEST_WEBHOOK_SECRET } from '../../helpers/config-dir.js';
import { freePort } from '../../helpers/free-port.js';
import { startWebhookReceiver } from '../../helpers/webhook-receiver.js';

/**
 * A webhook URL with a secret in its query string (`?key=…`, as some trigger services issue):
 * the POST goes to the URL whole, and the value appears nowhere the bridge shows or logs the URL —
 * `config`, `doctor`, `status`, `serve`'s summary, `/health`, and the log (debug level) of a
 * SendMessage → webhook → GetTask round trip.
 */
const SECRET = 'Qs3cr3t-in-the-query-7f1e9a';
const cleanup: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f();
});

describe('a secret in the webhook URL query string', () => {
  it('is used for the POST and redacted as ?<redacted> everywhere the URL is shown or logged', async () => {
    const receiver = await startWebhookReceiver({ secret: TEST_WEBHOOK_SECRET, bearer: TEST_WEBHOOK_BEARER, respond: () => ({ status: 202 }) });
    cleanup.push(() => receiver.close());
    const port = await freePort();
    const url = `${receiver.url}?key=${SECRET}`;
    const c = makeConfigDir(`${minimalToml({ listen: `127.0.0.1:${port}`, webhookUrl: url })}\n[log]\nfile = "logs/mailbridge.log"\nlevel = "debug"\n`);
    cleanup.push(() => rmSync(c.dir, { recursive: true, force: true }));
    for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(c.dir, 'Maildir', sub), { recursive: true });
    const cli = (...args: string[]) => runCli(['--config', c.configPath, ...args]);

    const shown = await cli('config');
    expect(shown.status, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`url = "${receiver.url}?<redacted>"`);
    const doctor = await cli('doctor');

    // serve, in the background until its summary is out.
    const serve = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', '--config', c.configPath, 'serve'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let serveOut = '';
    const exited = new Promise<void>((resolve) => serve.once('close', () => resolve()));
    cleanup.push(async () => {
      serve.kill('SIGKILL');
      await exited;
    });
    await new Promise<void>((resolve, reject) => {
      const on = (d: Buffer): void => {
        serveOut += d.toString('utf8');
        if (/\n {2}log {6}.*\n/.test(serveOut)) resolve();
      };
      serve.stdout.on('data', on);
      serve.stderr.on('data', on);
      serve.once('close', (code) => reject(new Error(`serve exited ${code}: ${serveOut}`)));
    });

    const endpoint = `http://127.0.0.1:${port}/agents/grok`;
    const rpc = async (body: unknown): Promise<{ result?: { task?: { id: string }; id?: string } }> => {
      const res = await fetch(endpoint, {
        method: 'POST',
        headers: { authorization: `Bearer ${c.bearer}`, 'content-type': 'application/json', 'a2a-version': '1.0' },
        body: JSON.stringify(body),
      });
      return (await res.json()) as { result?: { task?: { id: string } } };
    };
    const sent = await rpc({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { role: 'ROLE_USER', messageId: 'm-1', contextId: 'ctx-1', parts: [{ text: 'Survey RAG papers' }] } } });
    const taskId = sent.result!.task!.id;
    // The POST went to the URL whole: the receiver saw the query.
    const [req] = await receiver.waitForRequests(1);
    expect(req!.path).toBe(`${new URL(receiver.url).pathname}?key=${SECRET}`);
    expect(req!.verified).toBe(true);
    const got = await rpc({ jsonrpc: '2.0', id: 2, method: 'GetTask', params: { id: taskId } });
    expect(got.result?.id).toBe(taskId);
    const health = await (await fetch(`http://127.0.0.1:${port}/health`)).text();
    const status = await cli('status');
    expect(status.stdout).toMatch(/^bridge {4}answering/m);
    const show = await cli('show', taskId);
    serve.kill('SIGTERM');
    await exited;
    const logs = readdirSync(join(c.dir, 'logs')).map((f) => readFileSync(join(c.dir, 'logs', f), 'utf8')).join('');
    expect(logs).toMatch(/webhook attempt/);

    const outputs = { config: shown.stdout + shown.stderr, doctor: doctor.stdout + doctor.stderr, serve: serveOut, health, status: status.stdout + status.stderr, show: show.stdout + show.stderr, log: logs };
    for (const [what, text] of Object.entries(outputs)) expect(text.includes(SECRET), `${what}: ${text}`).toBe(false);
  });
});
