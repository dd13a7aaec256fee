import { readFileSync, rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../../helpers/bridge-harness.js';
import { startDovecot, type DovecotHandle } from '../../helpers/dovecot.js';

/**
 * The README's "Calling it by hand" examples, as written there (each `rpc '…'` body, `<task id>`
 * filled in from the answer the README says to take it from), against the bridge over raw
 * JSON-RPC with the README's headers: each answer has the shape the README's text describes.
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
    const section = readme.slice(readme.indexOf('### Calling it by hand'), readme.indexOf('### How callers see a long job'));
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
    expect((await call(withId(bodies[3]!))).result!.status!.state).toBe('TASK_STATE_CANCELED'); // again: the same answer
    const unknown = await call(withId(bodies[1]!).replace(id, '00000000-0000-4000-8000-000000000000'));
    expect(unknown.error!.code).toBe(-32001);
  });
});
