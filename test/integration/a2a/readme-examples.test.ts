import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../../helpers/bridge-harness.js';
import { startDovecot, type DovecotHandle } from '../../helpers/dovecot.js';
import { TEST_BEARER } from '../../helpers/config-dir.js';

/**
 * The README's "Calling it by hand" and "Calling it from code" examples, as written there (each `rpc '…'` body, `<task id>`
 * filled in from the answer the README says to take it from), against the bridge over raw
 * JSON-RPC with the README's headers: each answer has the shape the README's text describes. The
 * SDK example runs as a user runs it (`node`, from the checkout, its bearer file under ~/.config),
 * its URL pointed at this bridge.
 */
let dovecot: DovecotHandle;
let h: Harness;
beforeAll(async () => {
  dovecot = await startDovecot();
  h = await startHarness({ dovecot });
});
afterAll(async () => {
  await h?.close();
  if (h) rmSync(h.configDir.dir, { recursive: true, force: true });
  await dovecot?.stop();
});

type Answer = { result?: Record<string, unknown> & { task?: { id: string; status: { state: string } }; id?: string; status?: { state: string } }; error?: { code: number } };

describe("README's raw JSON-RPC examples", () => {
  it('each body, as written, answers as the README says', async () => {
    const readme = readFileSync('README.md', 'utf8');
    const section = readme.slice(readme.indexOf('### Calling it by hand'), readme.indexOf('### Calling it from code'));
    const bodies = [...section.matchAll(/^rpc '(.+)'$/gm)].map((m) => m[1]!);
    expect(bodies.map((b) => (JSON.parse(b) as { method: string }).method)).toEqual(['SendMessage', 'GetTask', 'ListTasks', 'CancelTask']);
    expect(section).toContain("-H 'A2A-Version: 1.0'");
    const call = async (body: string): Promise<Answer> => (await h.rpc(JSON.parse(body) as object)).json as Answer;

    const sent = await call(bodies[0]!);
    // "GetTask: the task by id (result.task.id of the SendMessage above …)"
    expect(section).toContain('result.task.id of the SendMessage above');
    const id = sent.result!.task!.id;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const withId = (b: string): string => b.replace('<task id>', id);

    const got = await call(withId(bodies[1]!));
    expect(got.result!.id).toBe(id);
    expect(got.result!.status!.state).toMatch(/^TASK_STATE_/);
    expect(got.result!.history).toEqual([]); // historyLength 0 leaves the messages out

    const listed = await call(bodies[2]!);
    expect(Object.keys(listed.result!).sort()).toEqual(['nextPageToken', 'pageSize', 'tasks', 'totalSize']);

    const canceled = await call(withId(bodies[3]!));
    expect(canceled.result!.status!.state).toBe('TASK_STATE_CANCELED');
    // "again: error -32002, TaskNotCancelable, "… is already canceled"" (A2A v1.0 §3.1.5: a task in a terminal state is not cancelable)
    expect(section).toContain('(again: error -32002, TaskNotCancelable, "… is already canceled";');
    const again = (await call(withId(bodies[3]!))).error as { code: number; message: string };
    expect(again.code).toBe(-32002);
    expect(again.message).toMatch(/ is already canceled;/);
    const unknown = await call(withId(bodies[1]!).replace(id, '00000000-0000-4000-8000-000000000000'));
    expect(unknown.error!.code).toBe(-32001);
  });
});

const run = promisify(execFile);

describe("README's SDK example", () => {
  const readme = (): string => readFileSync('README.md', 'utf8');
  const section = (): string => readme().slice(readme().indexOf('### Calling it from code'), readme().indexOf('### How callers see a long job'));

  it('runs as written: the job is stored and sent, the poll answers the same task, as the README says it prints', async () => {
    const code = /```js\n([\s\S]+?)```/.exec(section())![1]!;
    const url = 'http://127.0.0.1:8765/agents/grok/';
    expect(code).toContain(`createFromUrl('${url}')`);
    // The bearer where `init` writes it, under a home folder of the test's own.
    const home = mkdtempSync(join(tmpdir(), 'mb-home-'));
    const before = h.receiver.requests.length;
    try {
      mkdirSync(join(home, '.config/a2a-mailbridge/secrets'), { recursive: true });
      writeFileSync(join(home, '.config/a2a-mailbridge/secrets/bearer'), `${TEST_BEARER}\n`, { mode: 0o600 });
      // --input-type=module -e resolves '@a2a-js/sdk' from the working folder: the checkout, as the README says.
      const { stdout } = await run(process.execPath, ['--input-type=module', '-e', code.replace(url, `${h.endpoint}/`)], { env: { ...process.env, HOME: home } });
      const lines = stdout.trim().split('\n');
      expect(lines).toHaveLength(2);
      const id = h.envelope(before + 1).task_id;
      expect(h.envelope(before + 1).ask).toBe('Survey RAG papers');
      expect(h.receiver.requests).toHaveLength(before + 1); // the poll sent nothing
      for (const line of lines) expect(line.startsWith(`TASK_STATE_WORKING ${id} The job is with the cloud agent grok since `)).toBe(true);
      expect(section()).toContain('It prints `TASK_STATE_WORKING <task id> The job is with the cloud agent grok since …` twice');
      // "client.getTask({ id }) and client.cancelTask({ id }) take the task id"
      expect(section()).toContain('`client.getTask({ id: task.id })` and `client.cancelTask({ id: task.id })` take the task\'s id');
      expect((await h.client.getTask({ id } as never)).id).toBe(id);
      // Run again while that task is still open: a new job again (its own context), not a poll of the first.
      const again = (await run(process.execPath, ['--input-type=module', '-e', code.replace(url, `${h.endpoint}/`)], { env: { ...process.env, HOME: home } })).stdout.trim().split('\n');
      expect(h.receiver.requests).toHaveLength(before + 2);
      const second = h.envelope(before + 2).task_id;
      expect(second).not.toBe(id);
      for (const line of again) expect(line.startsWith(`TASK_STATE_WORKING ${second} The job is with the cloud agent grok since `)).toBe(true);
      // "Text sent on a context whose task is still open … its status beginning `Your message was not sent to grok`"
      expect(section()).toContain('its status beginning `Your message was not sent to grok`');
      const onOpen = await h.client.sendMessage({ message: { messageId: 'readme-open-ctx', contextId: (await h.client.getTask({ id } as never)).contextId, role: 1, parts: [{ content: { $case: 'text', value: 'Survey RAG papers' }, mediaType: 'text/plain' }] } } as never);
      const onOpenTask = onOpen as { id: string; status: { message: { parts: { content: { value: string } }[] } } };
      expect(onOpenTask.id).toBe(id);
      expect(onOpenTask.status.message.parts[0]!.content.value.startsWith('Your message was not sent to grok')).toBe(true);
      expect(h.receiver.requests).toHaveLength(before + 2);
      expect((await h.client.cancelTask({ id } as never)).status?.state).toBe(5); // TASK_STATE_CANCELED
      await h.client.cancelTask({ id: second } as never);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('the shapes it warns about are refused with the fix named: a string role through the SDK, the other dialect\'s role over raw JSON-RPC', async () => {
    expect(section()).toContain('a string role is sent as `"UNRECOGNIZED"` with empty parts, and refused');
    const before = h.receiver.requests.length;
    const asJson = { message: { messageId: crypto.randomUUID(), contextId: 'ctx-sdk-trap', role: 'ROLE_USER', parts: [{ text: 'x', mediaType: 'text/plain' }] } };
    await expect(h.client.sendMessage(asJson as never)).rejects.toThrow(
      /message\.role must be ROLE_USER \(got "UNRECOGNIZED"\); .*role: Role\.ROLE_USER \(import \{ Role \} from '@a2a-js\/sdk'\) and parts: \[\{ content: \{ \$case: 'text'/,
    );
    const body = (method: string, role: string) => ({ jsonrpc: '2.0', id: 1, method, params: { message: { role, messageId: crypto.randomUUID(), parts: [{ kind: 'text', text: 'x' }] } } });
    const v1 = await h.rpc(body('SendMessage', 'user'));
    expect((v1.json as { error: { code: number; message: string } }).error).toEqual(
      expect.objectContaining({ code: -32602, message: 'message.role must be ROLE_USER (got "user"); "user" is the v0.3 spelling, taken by message/send and message/stream' }),
    );
    const v03 = await h.rpc(body('message/send', 'ROLE_USER'), { 'a2a-version': '0.3' });
    expect((v03.json as { error: { message: string } }).error.message).toBe('message.role must be user (got "ROLE_USER"); "ROLE_USER" is the v1.0 spelling, taken by SendMessage and SendStreamingMessage');
    expect(h.receiver.requests).toHaveLength(before); // nothing refused was sent
  });
});
