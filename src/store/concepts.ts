import { artifactReads, artifactWrites } from './artifacts.js';
import { attemptReads, attemptWrites } from './attempts.js';
import { auditReads } from './audit.js';
import type { Db, Writer } from './db.js';
import { largeValueReads, largeValueWrites } from './large-values.js';
import { ledgerReads, ledgerWrites } from './ledger.js';
import { limitReads } from './limits.js';
import { mailboxReads, mailboxWrites } from './mailbox-state.js';
import { messageReads, messageWrites } from './messages.js';
import { overviewReads } from './overview.js';
import { pruneReads, pruneWrites } from './prune.js';
import { pushReads, pushWrites } from './push.js';
import { replyReads, replyWrites } from './replies.js';
import { scheduleReads, scheduleWrites } from './schedule.js';
import { statsReads } from './stats.js';
import { taskEventReads } from './task-events.js';
import { taskReads, taskWrites } from './task-rows.js';
import { dispatchWrites, turnReads, turnWrites } from './turns.js';

/**
 * The store's concepts (docs/architecture.md, "The store"): the reads of each on a connection, and
 * a transaction's reads and writes. The facade, src/store/store.ts, exposes them.
 */

export function reads(db: Db) {
  return {
    tasks: taskReads(db),
    events: taskEventReads(db),
    audit: auditReads(db),
    turns: turnReads(db),
    attempts: attemptReads(db),
    ledger: ledgerReads(db),
    messages: messageReads(db),
    artifacts: artifactReads(db),
    replies: replyReads(db),
    mailbox: mailboxReads(db),
    stats: statsReads(db),
    overview: overviewReads(db),
    limits: limitReads(db),
    retention: pruneReads(db),
    push: pushReads(db),
    schedule: scheduleReads(db),
    largeValues: largeValueReads(db),
  };
}

export function writes(db: Db, w: Writer) {
  const r = reads(db);
  return {
    ...r,
    tasks: { ...r.tasks, ...taskWrites(w) },
    turns: { ...r.turns, ...turnWrites(w) },
    dispatch: dispatchWrites(w),
    attempts: { ...r.attempts, ...attemptWrites(w) },
    ledger: { ...r.ledger, ...ledgerWrites(w) },
    messages: { ...r.messages, ...messageWrites(w) },
    artifacts: { ...r.artifacts, ...artifactWrites(w) },
    replies: { ...r.replies, ...replyWrites(w) },
    mailbox: { ...r.mailbox, ...mailboxWrites(w) },
    retention: { ...r.retention, ...pruneWrites(w) },
    push: { ...r.push, ...pushWrites(w) },
    largeValues: { ...r.largeValues, ...largeValueWrites(w) },
    schedule: { ...r.schedule, ...scheduleWrites(w) },
  };
}

/** What the store can read, by concept. */
export type StoreReads = ReturnType<typeof reads>;
/** What a transaction can read and write: the reads, plus each concept's writes. Exists only inside the store's `tx` (store.ts). */
export type StoreTx = ReturnType<typeof writes>;
