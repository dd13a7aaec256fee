/**
 * The corpus's tasks in a real store, and messages taken in by the code that ships: the
 * manifest's tasks (test/helpers/corpus.ts) are written through the store's own writes, then each message goes through `intake` (src/core/mail-check.ts) — the judge, the
 * ledger row, the promotion and the watermark, exactly as a mailbox check runs them.
 */
import { createHash } from 'node:crypto';
import type { AgentConfig } from '../../src/config/config.js';
import type { JudgeRules } from '../../src/core/judge.js';
import { intake, intakeHeaderBlocks, type Intake } from '../../src/core/mail-check.js';
import type { Logger } from 'pino';
import { createLogger } from '../../src/log.js';
import { Store, type StoreTx } from '../../src/store/store.js';
import type { ProviderProfile } from '../../src/uplink/border.js';
import type { DnsResolver } from '../../src/uplink/dkim.js';
import { MAX_HEADER_BLOCK_BYTES } from '../../src/uplink/gates.js';
import { headerEnd } from '../../src/uplink/raw-headers.js';
import type { Verdict } from '../../src/uplink/verdicts.js';
import type { CorpusManifest, CorpusMessage, CorpusTask } from './corpus.js';

const DAY = 86_400_000;
const silent = createLogger('silent');

/** The corpus agent's gate configuration: the manifest's profile and Date skew, local DKIM verification on. */
export interface CorpusSetting {
  agents: readonly AgentConfig[];
  profile: ProviderProfile;
  resolver: DnsResolver;
  verifyDkim?: boolean;
  /** `mailbox.max_attachment_bytes` (default: the config's, 1 MiB). */
  maxAttachmentBytes?: number;
  /** Where intake logs (default: nowhere). */
  log?: Logger;
}

function seed(db: StoreTx, t: CorpusTask, dateSkewMs: number): void {
  const at = Date.parse(t.dispatchedAt);
  const open = t.state === 'SUBMITTED' || t.state === 'WORKING';
  db.tasks.insert({
    id: t.id,
    agent: t.agent,
    contextId: `ctx-${t.id.slice(0, 8)}`,
    state: t.state,
    stateReason: t.failedBy ? `failed by ${t.failedBy}` : `corpus task, ${t.state.toLowerCase()}`,
    failedBy: t.failedBy,
    turn: 1,
    caller: 'corpus',
    createdAt: at,
    updatedAt: at,
    deadlineAt: open ? at + DAY : null,
  });
  db.turns.insert({
    taskId: t.id, turn: 1, ask: 'the corpus job', replyToken: t.token, deadlineAt: at + DAY, dispatchId: `msg_${t.id.replaceAll('-', '')}`,
    envelope: Buffer.from('{}'), dispatchState: 'accepted', nextAttemptAt: null, acceptedAt: at,
    replyStatus: null, replyText: null, replyLedgerId: null, repliedAt: null, createdAt: at,
  });
  t.appliedMessageIds.forEach((messageId, i) => {
    db.ledger.record({
      source: `corpus-seed:${t.id}:${i}`, seenAt: at + dateSkewMs, messageId, fromHeader: null, subject: null, dateHeader: null, size: 0,
      rawSha256: createHash('sha256').update(`seed ${t.id} ${messageId}`).digest('hex'), raw: null, agent: t.agent, taskId: t.id,
      verdict: 'applied:done', reason: 'an earlier reply (corpus seed)',
    });
  });
}

const images = new Map<string, Buffer>();

/** The image of a store holding the manifest's tasks, the live one changed by `live` (cached per change). */
function image(m: CorpusManifest, live: CorpusMessage['task'] = {}): Buffer {
  const key = JSON.stringify(live);
  let img = images.get(key);
  if (!img) {
    const store = Store.open(':memory:');
    store.tx((tx) => {
      for (const t of m.tasks) seed(tx, t.id === m.liveTaskId ? { ...t, ...live } : t, m.dateSkewMs);
    });
    img = store.image();
    store.close();
    images.set(key, img);
  }
  return img;
}

export interface CorpusStore {
  store: Store;
  /** Takes one message in, as a mailbox check does; `tooLarge` and `receivedAt` as the mailbox would report them. */
  take(raw: Buffer, o?: { tooLarge?: boolean; receivedAt?: number | null; now?: number; resolver?: DnsResolver }): Promise<Intake>;
  /**
   * Takes one message's header block in, as the header stage of a check does (`intakeHeaderBlocks`:
   * the block up to its empty line, the whole message's size): the verdict recorded, or null when
   * no gate that reads the header block alone refused it (a check then reads it whole: {@link take}).
   */
  takeHeaderBlock(raw: Buffer): Verdict | null;
  close(): void;
}

/**
 * A fresh store with the manifest's tasks, judged at the manifest's `judgedAt`.
 * @param live fields of the live task that differ for this case (a deadline failure, say)
 */
export function corpusStore(m: CorpusManifest, s: CorpusSetting, live: CorpusMessage['task'] = {}): CorpusStore {
  const store = Store.open(image(m, live));
  const rules: JudgeRules = { agents: s.agents, profile: s.profile, verifyDkim: s.verifyDkim ?? true, dateSkewMs: m.dateSkewMs, maxMessageBytes: 10 * 1024 * 1024, ...(s.maxAttachmentBytes !== undefined ? { maxAttachmentBytes: s.maxAttachmentBytes } : {}) };
  const judgedAt = Date.parse(m.judgedAt);
  let uid = 0;
  return {
    store,
    take: (raw, o = {}) => {
      uid += 1;
      const now = o.now ?? judgedAt;
      return intake(
        { store, rules, resolver: o.resolver ?? s.resolver, now: () => now, log: s.log ?? silent, folder: 'INBOX', configFile: '' },
        { uid, source: `corpus:INBOX:1:${uid}`, raw, size: raw.length, tooLarge: o.tooLarge ?? false, receivedAt: o.receivedAt ?? null },
        '1',
      );
    },
    takeHeaderBlock: (raw) => {
      uid += 1;
      const end = headerEnd(raw, MAX_HEADER_BLOCK_BYTES);
      const head = end < 0 ? raw.subarray(0, MAX_HEADER_BLOCK_BYTES) : raw.subarray(0, end);
      const message = { uid, source: `corpus:INBOX:1:${uid}`, head, size: raw.length, receivedAt: null, passes: uid };
      const c = { store, rules, resolver: s.resolver, now: () => judgedAt, log: s.log ?? silent, folder: 'INBOX', configFile: '' };
      const { recorded } = intakeHeaderBlocks(c, [message], '1', { maxMessageBytes: rules.maxMessageBytes, passTo: () => uid });
      return recorded[0]?.out.verdict ?? null;
    },
    close: () => store.close(),
  };
}
