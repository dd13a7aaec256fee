/**
 * A task's progress notes (`status: working`) do not make each later one cost more (attack review
 * 8): a stream's update for a change is built without the task's history (src/core/task-follow.ts;
 * a status or artifact update carries none), and a view without history reads only the replies it
 * shows (src/core/task-view.ts `readReplies`, store/replies.ts `shownOfTask`). Before, with one
 * stream open, every note fenced every earlier one (200 notes of 200 KB: 29.5 s of CPU against
 * 8.0 s without the stream). Notes applied by the shipping `recordDecision`, on a running bridge.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type App } from '../../../src/app.js';
import { loadConfig, type AgentConfig } from '../../../src/config/config.js';
import { recordDecision } from '../../../src/core/apply-reply.js';
import type { SendResult } from '../../../src/core/bridge.js';
import type { Decision } from '../../../src/core/judge.js';
import { followTask, type TaskUpdate } from '../../../src/core/task-follow.js';
import { viewTask } from '../../../src/core/task-view.js';
import { createLogger } from '../../../src/log.js';
import type { Store } from '../../../src/store/store.js';
import { messageFacts } from '../../../src/uplink/gates.js';
import { MaildirMailbox } from '../../../src/uplink/maildir-mailbox.js';
import { makeConfigDir, minimalToml, type ConfigDir } from '../../helpers/config-dir.js';

let dir: ConfigDir;
let app: App;
let agent: AgentConfig;

beforeAll(async () => {
  dir = makeConfigDir(minimalToml({ webhookUrl: 'http://127.0.0.1:9/hook' }).replace('[mailbox]', '[mailbox]\ncheck_interval_s = 3600'));
  const config = loadConfig(dir.configPath);
  for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(config.mailbox.maildirPath!, sub), { recursive: true });
  app = await startApp(config, { log: createLogger('silent'), mailbox: new MaildirMailbox(config.mailbox.maildirPath!) });
  agent = config.agents[0]!;
});
afterAll(async () => {
  await app?.close();
  rmSync(dir.dir, { recursive: true, force: true });
});

/** The agent's progress note `n`, applied as a check applies one. @returns its ledger id */
function applyNote(store: Store, taskId: string, n: number): number {
  const raw = Buffer.from(`From: ${agent.address}\r\nSubject: Re: [${agent.tag}:${taskId}]\r\nMessage-ID: <note-${n}@agent.example>\r\nDate: Tue, 1 Dec 2026 12:00:00 +0000\r\n\r\nnote ${n}\r\n`);
  return store.tx((tx) => {
    const task = tx.tasks.get(taskId)!;
    const turn = tx.turns.get(taskId, task.turn)!;
    const d: Exclude<Decision, { kind: 'defer' }> = {
      kind: 'apply', verdict: 'applied:working', reason: 'all gates passed (test)', status: 'working', message: messageFacts(raw, raw.length),
      on: { tag: { agent, taskId }, task, turn }, evidence: 'whole', signature: `c2lnbmF0dXJl${n}`,
      reply: { token: turn.replyToken, tokenProblem: null, status: 'working', statusProblem: null, answer: `progress note ${n}`, omittedLines: 0, bodyKind: 'text', attachments: [] },
    };
    return recordDecision(tx, d, { source: `test:notes:${n}`, raw, receivedAt: null, at: Date.now() })!;
  });
}

describe("a task's progress notes", () => {
  it("a stream's updates carry no history, and a view without history reads only the replies it shows", async () => {
    const sent: SendResult = await app.bridge.send(agent, { messageId: 'm-notes', contextId: 'ctx-notes', text: 'a long job', contentSha256: 'sha-notes', caller: 'test' }, { returnImmediately: true });
    if (!('task' in sent)) throw new Error('no task');
    const taskId = sent.task.id;
    const updates = followTask(app.bridge, agent, taskId)[Symbol.asyncIterator]();
    expect((await updates.next()).value).toMatchObject({ kind: 'task' });
    const ids: number[] = [];
    for (let n = 1; n <= 3; n++) {
      ids.push(applyNote(app.bridge.ctx.store, taskId, n));
      const u = (await updates.next()).value as TaskUpdate;
      expect(u.kind).toBe('status');
      expect(u.task.history).toEqual([]);
      expect(JSON.stringify(u.task.status)).toContain(`progress note ${n}`);
    }
    await updates.return!();

    // Which replies a view reads, by ledger id: the real store's reads, recorded.
    const store = app.bridge.ctx.store;
    const read: number[] = [];
    const real = store.replies;
    const seen = <R extends { ledgerId: number }>(rows: R[]): R[] => (read.push(...rows.map((x) => x.ledgerId)), rows);
    const replies: Store['replies'] = { ...real, ofTask: (id) => seen(real.ofTask(id)), shownOfTask: (id, ledgerId) => seen(real.shownOfTask(id, ledgerId)) };
    const watched = new Proxy(store, { get: (s, name): unknown => (name === 'replies' ? replies : Reflect.get(s, name, s)) });
    const ctx = { ...app.bridge.ctx, store: watched };
    const t = store.tasks.get(taskId)!;
    const bare = viewTask(ctx, agent, t, 0);
    expect(read).toEqual([ids[2]]);
    const whole = viewTask(app.bridge.ctx, agent, t);
    expect(bare.status).toEqual(whole.status);
    expect(bare.artifacts).toEqual(whole.artifacts);
    expect(whole.history.filter((m) => m.role === 'agent')).toHaveLength(3);
  });
});
