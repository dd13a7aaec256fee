/**
 * Fills a store with finished work fast, through the store's own writes (so the rows are the
 * ones the bridge writes, whatever the schema version), in one transaction: per task the task, its
 * turn and the caller's ask (as `submit` leaves them), then what applying a genuine `done` reply
 * writes — the ledger row with the raw bytes, the reply on the turn, the agent's message, the
 * artifact, and the move to COMPLETED (task event and audit entry).
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Store } from '../../src/store/store.js';
import { AGENT, ANSWER } from './mail-fixture.js';

/**
 * Writes `n` COMPLETED tasks, each with one applied reply in the ledger (raw bytes kept, as for
 * every tagged message), and returns their ids. `rawTemplate` is a reply as it sat in the mailbox;
 * each row gets a copy with a header line of its own, so digests differ.
 */
export function fillFinishedTasks(store: Store, n: number, rawTemplate: Buffer): string[] {
  const ids: string[] = [];
  const label = `[UNTRUSTED — ${AGENT.name} reply, verify before acting]`;
  const start = Date.now() - n * 60_000;
  store.tx((db) => {
    for (let i = 0; i < n; i++) {
      const at = start + i * 60_000;
      const taskId = randomUUID();
      const contextId = `ctx-${randomBytes(8).toString('hex')}`;
      const ask = `Job ${i}: survey the 2025 papers on retrieval-augmented generation and summarise the three strongest.`;
      db.tasks.insert({ id: taskId, agent: AGENT.name, contextId, state: 'WORKING', stateReason: 'the webhook was accepted', failedBy: null, turn: 1, caller: 'a2a:bench', createdAt: at, updatedAt: at, deadlineAt: at + 3600_000 });
      db.turns.insert({
        taskId,
        turn: 1,
        ask,
        replyToken: randomBytes(16).toString('hex'),
        deadlineAt: at + 3600_000,
        dispatchId: `msg_${randomBytes(16).toString('hex')}`,
        envelope: Buffer.from(JSON.stringify({ v: 1, task_id: taskId, turn: 1, ask, thread: [] })),
        dispatchState: 'accepted',
        nextAttemptAt: null,
        acceptedAt: at,
        replyStatus: null,
        replyText: null,
        replyLedgerId: null,
        repliedAt: null,
        createdAt: at,
      });
      db.messages.insert({ agent: AGENT.name, messageId: randomBytes(16).toString('hex'), taskId, contextId, role: 'user', kind: 'ask', turn: 1, text: ask, contentSha256: createHash('sha256').update(ask).digest('hex'), createdAt: at });

      const raw = Buffer.concat([Buffer.from(`X-Bench-Copy: ${i}\r\n`), rawTemplate]);
      const repliedAt = at + 30 * 60_000;
      const ledgerId = db.ledger.record({
        source: `imap:INBOX:1:${i + 1}`,
        seenAt: repliedAt,
        messageId: `<bench-${i}@${AGENT.domain}>`,
        fromHeader: `Grok Agent <${AGENT.address}>`,
        subject: `Re: your job [${AGENT.tag}:${taskId}]`,
        dateHeader: new Date(repliedAt).toUTCString(),
        size: raw.length,
        rawSha256: createHash('sha256').update(raw).digest('hex'),
        raw,
        agent: AGENT.name,
        taskId,
        verdict: 'applied:done',
        reason: 'all gates passed; status done',
      });
      if (ledgerId === null) throw new Error('ledger row not written');
      const body = `${label}\n${ANSWER}`;
      db.turns.recordReply(taskId, 1, { status: 'done', text: ANSWER, ledgerId, at: repliedAt, revokeToken: true });
      db.messages.insert({ agent: AGENT.name, messageId: `reply-${ledgerId}`, taskId, contextId, role: 'agent', kind: 'reply', turn: 1, text: body, contentSha256: createHash('sha256').update(raw).digest('hex'), createdAt: repliedAt });
      db.artifacts.insert({ artifactId: `reply-${ledgerId}`, taskId, turn: 1, name: 'reply', text: body, ledgerId, createdAt: repliedAt });
      db.tasks.transition(db.tasks.get(taskId)!, 'COMPLETED', { at: repliedAt, cause: `completed by reply <bench-${i}@${AGENT.domain}> (ledger #${ledgerId})`, deadlineAt: null });
      ids.push(taskId);
    }
  });
  return ids;
}
