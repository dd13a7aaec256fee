import type { Logger } from 'pino';
import { commandLine } from '../config/config-path.js';
import { limitedLog, type LimitedLog } from '../log.js';
import { LARGE_VALUE_MIN, type Store, type StoreTx } from '../store/store.js';
import type { DnsResolver } from '../uplink/dkim.js';
import { recordableFacts } from '../uplink/gates.js';
import { ParserUnavailableError } from '../uplink/parser-unavailable.js';
import type { FetchedMessage, HeaderedMessage } from '../uplink/mailbox.js';
import type { Verdict } from '../uplink/verdicts.js';
import { recordDecision } from './apply-reply.js';
import { judgeHeaderBlock, judgeMessage, judgeStamp, type Decision, type JudgeRules, type JudgeStore } from './judge.js';

/**
 * Intake (docs/architecture.md, "The data path"): a message through the judge (src/core/judge.ts)
 * and into the store — its verdict, any promotion and the watermark in one transaction — whether
 * it is judged whole ({@link intake}) or refused on its header block alone
 * ({@link intakeHeaderBlocks}, the header stage of a check). The corpus and property tests take
 * mail in through here, the code a mailbox check runs.
 */

/**
 * Logs a recorded verdict with ids only (the operator sees refusals at the default level; no
 * header, address or text of the mail goes into the log): an applied reply at info, untagged mail
 * and copies at info, every other refusal at warn.
 */
/** Refusals of mail that did not authenticate are logged at most once a minute per verdict (the ledger keeps each). */
const UNAUTHENTICATED_LOG_EVERY_MS = 60_000;

/** One limited log per logger: its state lives as long as the bridge's logger, across checks. */
const limitedLogs = new WeakMap<Logger, LimitedLog>();

/**
 * A recorded verdict in the log. An applied or late reply, and a refusal of mail that
 * authenticated (it carries the agent's signature: bad-token, task-closed, bad-status…; at most one
 * per signature, gate 1), get a line each. Anyone can send the rest — unauthenticated refusals and
 * skipped mail — so a flood of them could push the log's history out of its rotation: at most one
 * line per verdict a minute, saying how many were left out (every one is a ledger row, and a debug
 * line).
 */
function logVerdict(c: Pick<IntakeContext, 'log' | 'now' | 'configFile'>, d: Exclude<Decision, { kind: 'defer' }>, f: { ledgerId: number | null; task: string | null; agent: string | null; source: string }): void {
  const { verdict } = d;
  const fields = { verdict, ledgerId: f.ledgerId, task: f.task, agent: f.agent, source: f.source };
  if (d.kind !== 'refuse') return void c.log.info(fields, 'reply applied');
  const skipped = verdict === 'no-task-id' || verdict === 'duplicate';
  const msg = skipped ? 'mail skipped' : `mail refused: ${verdict}; see ${commandLine(c.configFile, `ledger${f.task ? ` --task ${f.task}` : ''}`)}`;
  if (d.signature !== null && !skipped) return void c.log.warn(fields, msg);
  let limited = limitedLogs.get(c.log);
  if (!limited) limitedLogs.set(c.log, (limited = limitedLog(c.log, UNAUTHENTICATED_LOG_EVERY_MS)));
  limited(c.now(), skipped ? 'info' : 'warn', verdict, fields, msg);
}

/** What {@link intake} needs: the store, the gates' configuration, DNS, the clock, the log, the folder's watermark key. */
export interface IntakeContext {
  store: Store;
  rules: JudgeRules;
  resolver: DnsResolver;
  now: () => number;
  log: Logger;
  folder: string;
  /** The bridge's config file, for the command a log line names (its `--config`: src/config/config-path.ts). */
  configFile: string;
}

/**
 * What became of one message:
 * - `recorded`: judged, and its decision committed (ledger row, any promotion, the watermark);
 * - `seen`: this copy (source) was recorded before; only the watermark moved;
 * - `deferred`: its DKIM key could not be looked up yet, or the MIME parser could not be loaded; nothing was written.
 */
export type Intake =
  | { kind: 'recorded'; verdict: Verdict; reason: string; ledgerId: number; decision: Exclude<Decision, { kind: 'defer' }> }
  | { kind: 'seen' }
  | { kind: 'deferred'; reason: string; cause?: 'parser'; /** The tagged agent whose DKIM key lookup failed, the task tagged, the selectors that failed. */ agent?: string; taskId?: string; selectors?: string[] };

/**
 * One fetched message through the judge (src/core/judge.ts) and into the store: the judge's
 * deciding step runs inside one `BEGIN IMMEDIATE` transaction that also records the decision
 * (src/core/apply-reply.ts) and moves the watermark to `passTo` (default: past the message; a
 * check passes the mark its pass allows, src/core/mail-check.ts). A message the judge fails on (a
 * defect of ours) is still recorded, as `unreadable`, so it is never retried silently.
 */
export async function intake(c: IntakeContext, msg: FetchedMessage, uidValidity: string, passTo: number = msg.uid): Promise<Intake> {
  const { store } = c;
  if (store.ledger.isSourceRecorded(msg.source)) {
    store.tx((tx) => tx.mailbox.advance(c.folder, uidValidity, passTo), { timedViewsOnly: true }); // no view shows the watermark
    return { kind: 'seen' };
  }
  const reads = judgeReads(store);
  /** Large values written before the decision (see `stage`), and whether the decision refers to them. */
  const staged: { raw?: number; answer?: number } = {};
  let stagedUsed = false;
  let answerSize = 0;
  /** Values no committed row refers to are dropped now; one left by a failure here is an orphan, deleted at the next start. */
  const dropUnused = async (): Promise<void> => {
    if (stagedUsed) return;
    try {
      await dropStaged(store, staged, { raw: msg.raw.length, answer: answerSize });
    } catch (err) {
      c.log.warn({ err: (err as Error).message, source: msg.source }, 'a large value written for a refused reply could not be dropped; it is deleted at the next start');
    }
  };
  /** Records the decision and moves the watermark past the message, in the open transaction. */
  const commit = (tx: StoreTx, d: Exclude<Decision, { kind: 'defer' }>): Intake => {
    const ledgerId = recordDecision(tx, d, { source: msg.source, raw: msg.raw, receivedAt: msg.receivedAt, at: c.now(), staged });
    stagedUsed = ledgerId !== null && d.kind !== 'refuse';
    tx.mailbox.advance(c.folder, uidValidity, passTo);
    return ledgerId === null ? { kind: 'seen' } : { kind: 'recorded', verdict: d.verdict, reason: d.reason, ledgerId, decision: d };
  };
  const logged = (out: Intake): Intake => (logIntake(c, out, msg.source), out);
  try {
    const out = await judgeMessage<Intake>(msg, {
      rules: c.rules,
      resolver: c.resolver,
      now: c.now,
      store: reads,
      settle: (decide) =>
        store.tx((tx): Intake => {
          const d = decide();
          return d.kind === 'defer' ? { kind: 'deferred', reason: d.reason, ...(d.cause ? { cause: d.cause } : {}), ...(d.agent ? { agent: d.agent } : {}), ...(d.taskId ? { taskId: d.taskId } : {}), ...(d.selectors ? { selectors: d.selectors } : {}) } : commit(tx, d);
        }),
      // An authenticated reply may be applied: a large raw message or answer is written now, in
      // bounded steps, so the decision's transaction only refers to it (src/store/large-values.ts).
      stage: async (reply) => {
        const at = c.now();
        answerSize = reply.answer.length;
        if (msg.raw.length >= LARGE_VALUE_MIN) staged.raw = await store.writeLargeValue(msg.raw, at);
        if (reply.answer.length >= LARGE_VALUE_MIN) staged.answer = await store.writeLargeValue(reply.answer, at);
      },
    });
    await dropUnused();
    return logged(out);
  } catch (err) {
    await dropUnused();
    // A library the judge reads mail with could not be loaded: ours to fix, so nothing is recorded
    // and the message is judged again on the next check (src/uplink/parser-unavailable.ts).
    if (err instanceof ParserUnavailableError) return logged({ kind: 'deferred', reason: err.message, cause: 'parser' });
    // The parsers never throw on hostile bytes; if something else does, the message is still recorded.
    c.log.error({ err: (err as Error).message, source: msg.source }, 'message could not be processed');
    const reason = `processing failed: ${(err as Error).message}`;
    return logged(store.tx((tx) => commit(tx, { kind: 'refuse', verdict: 'unreadable', reason, message: recordableFacts(msg.raw, msg.size), tag: null, evidence: 'none', signature: null })));
  }
}

/**
 * Drops the large values of `staged` when no committed row refers to them (the mail was refused
 * after all, or a defect of ours stopped the decision).
 */
async function dropStaged(store: Store, staged: { raw?: number; answer?: number }, sizes: { raw: number; answer: number }): Promise<void> {
  if (staged.raw !== undefined) await store.dropLargeValue(staged.raw, sizes.raw);
  if (staged.answer !== undefined) await store.dropLargeValue(staged.answer, sizes.answer);
}

/** The judge's store reads, answered by `store` (outside and inside the deciding transaction alike: it reads what it holds now). */
function judgeReads(store: Store): JudgeStore {
  return {
    seenDigest: (sha) => store.ledger.hasRawDigest(sha),
    authenticatedWith: (sigs, messageId) => store.ledger.authenticatedWith(sigs, messageId),
    task: (id) => {
      const task = store.tasks.get(id);
      return task && { task, turn: store.turns.get(task.id, task.turn) };
    },
    messageIdApplied: (taskId, messageId) => store.ledger.isMessageIdApplied(taskId, messageId),
  };
}

/** After the commit: a recorded verdict in the log. */
function logIntake(c: Pick<IntakeContext, 'log' | 'now' | 'configFile'>, out: Intake, source: string): void {
  if (out.kind !== 'recorded') return;
  const tag = out.decision.kind === 'refuse' ? out.decision.tag : out.decision.on.tag;
  logVerdict(c, out.decision, { ledgerId: out.ledgerId, task: tag?.taskId ?? null, agent: tag?.agent.name ?? null, source });
}

/**
 * The header stage of a check (docs/architecture.md, "The header stage"): each header block of a
 * batch through the gates that read the header block alone (`judgeHeaderBlock`) — or, for the
 * first bytes of a block that runs on past them (`prefixOnly`), through the stamp rule
 * (`judgeStamp`) — in one `BEGIN IMMEDIATE` transaction. A refusal is recorded at once — the
 * ledger row, with what was read as its evidence — and `passTo(source)` says where the watermark
 * may move now that the message has a verdict (null: not yet, an older message waits). What no
 * gate refused is returned, in order: a `prefixOnly` one to be read on (`MailboxPass.headerBlocks`)
 * and screened again, the rest to be judged whole; a copy already recorded is skipped. With
 * `o.stop`, asked after each block: when it says true the rest of the batch is left unjudged.
 *
 * @returns the survivors, and what was recorded (its outcome and source), in order; `rest`: the
 *   blocks left unjudged (`o.stop`), in order
 */
export function intakeHeaderBlocks(
  c: IntakeContext,
  batch: readonly HeaderedMessage[],
  uidValidity: string,
  o: { maxMessageBytes: number; passTo: (source: string) => number | null; stop?: () => boolean },
): { survivors: HeaderedMessage[]; recorded: { out: Extract<Intake, { kind: 'recorded' }>; message: HeaderedMessage }[]; rest: HeaderedMessage[] } {
  const { store } = c;
  const reads = judgeReads(store);
  const survivors: HeaderedMessage[] = [];
  const recorded: { out: Extract<Intake, { kind: 'recorded' }>; message: HeaderedMessage }[] = [];
  let done = 0;
  store.tx((tx) => {
    for (const h of batch) {
      if (done > 0 && o.stop?.()) break;
      done++;
      if (!store.ledger.isSourceRecorded(h.source)) {
        const d =
          h.prefixOnly && !h.unreadable
            ? judgeStamp({ raw: h.head, size: h.size }, c.rules, reads)
            : judgeHeaderBlock({ raw: h.head, size: h.size, tooLarge: h.size > o.maxMessageBytes, receivedAt: h.receivedAt, ...(h.unreadable ? { unreadable: h.unreadable } : {}) }, c.rules, reads);
        if (!d) {
          survivors.push(h);
          continue;
        }
        const ledgerId = recordDecision(tx, d, { source: h.source, raw: h.head, receivedAt: h.receivedAt, at: c.now() });
        if (ledgerId !== null) recorded.push({ out: { kind: 'recorded', verdict: d.verdict, reason: d.reason, ledgerId, decision: d }, message: h });
      }
      const to = o.passTo(h.source);
      if (to !== null) tx.mailbox.advance(c.folder, uidValidity, to);
    }
  });
  for (const r of recorded) logIntake(c, r.out, r.message.source);
  return { survivors, recorded, rest: batch.slice(done) };
}
