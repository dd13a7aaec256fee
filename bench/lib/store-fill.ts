/**
 * Fills a store with finished work fast, through the bridge's own functions, so the rows are the
 * ones the bridge writes whatever the schema: per task `submit` (the task, its turn with the
 * signed envelope, the caller's ask), one accepted webhook attempt (the writes `attemptDispatch`
 * makes on a 2xx: the attempt, the dispatch `accepted`, the move to WORKING), then
 * `recordDecision` with the decision the judge makes for a genuine `status: done` reply (the
 * ledger row with the raw bytes, the reply, the move to COMPLETED with its audit entry).
 *
 * What it leaves out is the network and the judge's own work (MIME parsing, DKIM): the judge's
 * decision is built here from what the reply says. The tasks are written in transactions of
 * `batch` tasks (one commit per batch, as a bulk import would), one minute apart in time; after
 * each commit the bridge's checkpointer (src/store/checkpointer.ts) copies the WAL into the store
 * before the next batch, as the event loop lets it between a running bridge's commits. (Without
 * that wait a fill that never yields never checkpoints: its WAL reached 900 MB at 80,000 tasks,
 * and every page read searched the WAL's index first — the fill slowed as it grew.)
 */
import { createHash, randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { buildBridge } from '../../src/app.js';
import { loadConfig } from '../../src/config/config.js';
import type { BridgeContext } from '../../src/core/context.js';
import { createLogger } from '../../src/log.js';
import { makeConfigDir } from '../../test/helpers/config-dir.js';
import { benchToml } from './bridge-fixture.js';
import { recordDecision } from '../../src/core/apply-reply.js';
import { submit } from '../../src/core/submit.js';
import { ANSWER } from './mail-fixture.js';

/** The clock the bridge of a fill runs on: `buildBridge(config, { now: () => clock.now })`. */
export interface FillClock {
  now: number;
}

export interface FillOptions {
  /** Tasks per transaction (default 2,000: about 15 MB of WAL). */
  batch?: number;
  /** The first task's creation time, ms (default: `n` minutes before now). */
  startAt?: number;
  /** The number of this fill's first task (raw copies and sources are numbered from it). */
  offset?: number;
  /** Called after each committed batch with the tasks written so far. */
  progress?: (done: number) => void;
}

/** A bridge on the store file `storePath` (the bench config, no server), on a clock the fill sets. */
export function fillBridge(storePath: string): { ctx: BridgeContext; clock: FillClock; close(): Promise<void> } {
  const dir = makeConfigDir(benchToml({ storePath, webhookUrl: 'http://127.0.0.1:9/hook', port: 9 }));
  const clock: FillClock = { now: Date.now() };
  const built = buildBridge(loadConfig(dir.configPath), { log: createLogger('silent'), now: () => clock.now });
  return {
    ctx: built.bridge.ctx,
    clock,
    async close() {
      await built.close();
      rmSync(dir.dir, { recursive: true, force: true });
    },
  };
}

/**
 * Writes `n` COMPLETED tasks of the config's first agent, each answered by a copy of
 * `rawTemplate` (a genuine reply as it sat in the mailbox; each copy gets a header line of its
 * own, so digests differ), and returns their ids.
 */
export async function fillFinishedTasks(ctx: BridgeContext, clock: FillClock, n: number, rawTemplate: Buffer, o: FillOptions = {}): Promise<string[]> {
  const agent = ctx.config.agents[0]!;
  const batch = o.batch ?? 2_000;
  const offset = o.offset ?? 0;
  const start = o.startAt ?? Date.now() - n * 60_000;
  const ids: string[] = [];
  for (let done = 0; done < n; ) {
    const upTo = Math.min(n, done + batch);
    ctx.store.tx((tx) => {
      for (let i = done; i < upTo; i++) {
        const k = offset + i;
        const at = start + i * 60_000;
        clock.now = at;
        const text = `Job ${k}: survey the 2025 papers on retrieval-augmented generation and summarise the three strongest.`;
        const sent = submit(ctx, agent, {
          messageId: randomBytes(16).toString('hex'),
          contextId: `ctx-${randomBytes(8).toString('hex')}`,
          text,
          contentSha256: createHash('sha256').update(text).digest('hex'),
          caller: 'a2a:bench',
        });
        if (sent.kind !== 'new') throw new Error(`submit answered ${sent.kind}`);
        const acceptedAt = at + 300;
        const attempt = tx.attempts.start({ dispatchId: sent.dispatchId, taskId: sent.task.id, turn: 1, at });
        tx.attempts.finish(attempt.id, { at: acceptedAt, outcome: 'accepted', httpStatus: 202, error: null });
        tx.dispatch.move(sent.dispatchId, 'accepted', { nextAttemptAt: null, acceptedAt });
        const task = tx.tasks.transition(sent.task, 'WORKING', { at: acceptedAt, cause: 'webhook accepted (HTTP 202) on attempt 1' });
        const turn = tx.turns.get(task.id, 1)!;

        const raw = Buffer.concat([Buffer.from(`X-Bench-Copy: ${k}\r\n`), rawTemplate]);
        const repliedAt = at + 30 * 60_000;
        const messageId = `<bench-${k}@agent.example>`;
        const ledgerId = recordDecision(
          tx,
          {
            kind: 'apply',
            verdict: 'applied:done',
            reason: 'all gates passed; status done',
            status: 'done',
            message: {
              fields: [],
              malformedHeaderLines: 0,
              rawSha256: createHash('sha256').update(raw).digest('hex'),
              size: raw.length,
              messageId,
              from: `Grok Agent <${agent.address}>`,
              subject: `Re: your job [${agent.tag}:${task.id}]`,
              date: new Date(repliedAt - 5000).toUTCString(),
            },
            on: { tag: { agent, taskId: task.id }, task, turn },
            reply: { token: turn.replyToken, tokenProblem: null, status: 'done', statusProblem: null, answer: ANSWER, omittedLines: 0, bodyKind: 'text', attachments: [] },
            evidence: 'whole',
            // An RSA-2048 signature's b= (256 bytes), one per reply as in the mailbox.
            signature: randomBytes(256).toString('base64'),
          },
          { source: `imap:INBOX:1:${k + 1}`, raw, receivedAt: repliedAt - 2000, at: repliedAt },
        );
        if (ledgerId === null) throw new Error('ledger row not written');
        ids.push(task.id);
      }
    });
    done = upTo;
    await ctx.store.checkpoint();
    o.progress?.(done);
  }
  return ids;
}
