import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { hermesBody, hex } from '../../helpers/bridge-harness.js';
import { makeConfigDir, minimalToml, TEST_WEBHOOK_BEARER, TEST_WEBHOOK_SECRET, type ConfigDir } from '../../helpers/config-dir.js';
import { freePort } from '../../helpers/free-port.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver.js';
import { killAll, logged, startBridgeProcess } from '../faults/bridge-process.js';

/**
 * `serve` stopped (SIGTERM, as `a2a-mailbridge stop` and a service manager send it) while
 * SubscribeToTask streams are open: each stream ends as an HTTP body ends (the chunked body's last
 * chunk), after an SSE comment saying the bridge stops, with no task event made up; the process
 * logs "stopped" and exits 0 (docs/streaming.md, "When the bridge stops").
 */
const dirs: ConfigDir[] = [];
const receivers: WebhookReceiver[] = [];
afterEach(killAll);
afterAll(async () => {
  for (const r of receivers) await r.close();
  for (const c of dirs) rmSync(c.dir, { recursive: true, force: true });
});

/** Reads `res`'s body to its end; resolves with the text, or rejects as the body reader does when the connection is cut. */
async function bodyText(res: Response, onChunk: (text: string) => void): Promise<string> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text;
    text += value;
    onChunk(text);
  }
}

describe('serve stopped while streams are open', () => {
  it('ends each open SubscribeToTask stream cleanly (raw JSON-RPC and HTTP+JSON: the body reader finishes; the SDK: its iterator ends), logs "stopped" and exits 0', async () => {
    const receiver = await startWebhookReceiver({ secret: TEST_WEBHOOK_SECRET, bearer: TEST_WEBHOOK_BEARER });
    receivers.push(receiver);
    const listen = `127.0.0.1:${await freePort()}`;
    const c = makeConfigDir(minimalToml({ listen, webhookUrl: receiver.url }));
    dirs.push(c);
    for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(c.dir, 'Maildir', sub), { recursive: true });
    const bridge = await startBridgeProcess(c.configPath);
    const endpoint = `http://${listen}/agents/grok`;
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${c.bearer}`, 'a2a-version': '1.0' };

    // A task the agent accepted (202): WORKING, so a stream of it stays open until the agent replies.
    const sent = (await (await fetch(endpoint, { method: 'POST', headers, body: JSON.stringify(hermesBody('Follow me', `ctx-${hex(8)}`)) })).json()) as {
      result: { task: { id: string; status: { state: string } } };
    };
    const taskId = sent.result.task.id;
    expect(sent.result.task.status.state).toBe('TASK_STATE_WORKING');

    // Stream 1, raw: the first event (the Task) has arrived once its data line is read.
    const raw = await fetch(endpoint, { method: 'POST', headers: { ...headers, accept: 'text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SubscribeToTask', params: { id: taskId } }) });
    expect(raw.headers.get('content-type')).toMatch(/^text\/event-stream/);
    let rawFirst!: () => void;
    const rawOpen = new Promise<void>((r) => (rawFirst = r));
    const rawText = bodyText(raw, (t) => {
      if (t.includes('\n\n')) rawFirst();
    });

    // Stream 2, raw over HTTP+JSON (GET /tasks/{id}:subscribe): the other caller of the SSE writer.
    const rest = await fetch(`${endpoint}/tasks/${taskId}:subscribe`, { headers: { authorization: `Bearer ${c.bearer}`, accept: 'text/event-stream' } });
    expect(rest.headers.get('content-type')).toMatch(/^text\/event-stream/);
    let restFirst!: () => void;
    const restOpen = new Promise<void>((r) => (restFirst = r));
    const restText = bodyText(rest, (t) => {
      if (t.includes('\n\n')) restFirst();
    });

    // Stream 3, the official SDK client (JSON-RPC transport): resubscribeTask is SubscribeToTask.
    const authed: typeof fetch = (input, init) => {
      const h = new Headers(init?.headers);
      h.set('authorization', `Bearer ${c.bearer}`);
      return fetch(input, { ...init, headers: h });
    };
    const client = await new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory({ fetchImpl: authed })] })).createFromUrl(`${endpoint}/`);
    const sdkSeen: string[] = [];
    let sdkFirst!: () => void;
    const sdkOpen = new Promise<void>((r) => (sdkFirst = r));
    const sdkDone = (async () => {
      for await (const e of client.resubscribeTask({ tenant: '', id: taskId })) {
        sdkSeen.push(e.payload!.$case);
        sdkFirst();
      }
    })().then(
      () => 'ended',
      (err: unknown) => err,
    );

    await Promise.all([rawOpen, restOpen, sdkOpen]);
    bridge.child.kill('SIGTERM');

    // The raw body reader finishes (no "terminated: other side closed"): the stream's last chunk came.
    const text = await rawText;
    const events = text.split('\n').filter((l) => l.startsWith('data: '));
    expect(events).toHaveLength(1);
    expect(JSON.parse(events[0]!.slice(6))).toMatchObject({ id: 1, result: { task: { id: taskId, status: { state: 'TASK_STATE_WORKING' } } } });
    // No made-up task event: after the Task only an SSE comment (ignored by SSE parsers) says why it ended.
    expect(text.slice(text.indexOf('\n\n') + 2)).toBe(': the bridge is stopping; subscribe again once it runs\n\n');

    const restBody = await restText;
    expect(restBody.split('\n').filter((l) => l.startsWith('data: ')).map((l) => Object.keys(JSON.parse(l.slice(6)) as object))).toEqual([['task']]);
    expect(restBody.endsWith('\n\n: the bridge is stopping; subscribe again once it runs\n\n')).toBe(true);

    // The SDK's parser reads EOF as the end of the stream: its iterator ends, it does not throw.
    expect(await sdkDone).toBe('ended');
    expect(sdkSeen).toEqual(['task']);

    expect(await bridge.exited).toEqual({ code: 0, signal: null });
    expect(logged(bridge, 'stopping')).toMatchObject([{ signal: 'SIGTERM' }]);
    expect(logged(bridge, 'stopped')).toMatchObject([{ streamsEnded: 3, connectionsCut: 0 }]);
  });
});
