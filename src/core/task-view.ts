import type { AgentConfig } from '../config/config.js';
import type { ArtifactRow } from '../store/artifacts.js';
import type { MessageViewRow } from '../store/messages.js';
import type { AttachmentInfo, ReplyRow } from '../store/replies.js';
import type { TaskRow } from '../store/task-rows.js';
import type { TaskState } from '../store/task-state.js';
import type { TurnStatus } from '../store/turns.js';
import type { BridgeContext } from './context.js';
import { deferralsOf } from './deferrals.js';
import type { Store } from '../store/store.js';
import { fenceMemo } from './fence-memo.js';
import { agentTextPart, attachmentParts, attachmentsArtifactId, bridgePart, callerPart, replyNotes, type AttachmentContent, type FenceFn, type PartView } from './parts.js';
import { statusText } from './status-text.js';
import { iso } from './time.js';
import { newFenceNonce } from './untrusted-text.js';

export type { PartView, AgentMeta, BridgeMeta } from './parts.js';

/** Longest progress note shown in a WORKING task's status message, in UTF-16 code units; the history holds the whole note. */
const PROGRESS_NOTE_MAX_CHARS = 4000;

export { TASK_STATES, type TaskState } from '../store/task-state.js';

/** A message of a task's history: the caller's asks (its own text) and the agent's replies (fenced, with the bridge's notes). */
export interface MessageView {
  messageId: string;
  contextId: string;
  taskId: string;
  role: 'user' | 'agent';
  parts: PartView[];
}

/** An artifact built from an authenticated reply: its text, or its attachments. */
export interface ArtifactView {
  artifactId: string;
  name: string;
  description: string;
  /** A reply that came after the task failed: shown, not applied. */
  late: boolean;
  parts: PartView[];
}

/** A task as callers see it, independent of the wire dialect (src/a2a/wire.ts renders it). Times in ms since the epoch. */
export interface TaskView {
  id: string;
  contextId: string;
  /** The agent's name. */
  agent: string;
  state: TaskState;
  /** The status timestamp: when the state was last set. */
  statusAt: number;
  turn: number;
  createdAt: number;
  /** The current turn's deadline; null while no turn awaits the agent. */
  deadlineAt: number | null;
  /** The parts of `status.message`: the bridge's text first, then any agent part it refers to; empty for no message. */
  status: PartView[];
  artifacts: ArtifactView[];
  /** Oldest first, bounded by the requested history length. */
  history: MessageView[];
}

/** Fixed cost counted per part and per message or artifact by {@link viewWeight}: its ids, metadata and object. */
const PART_OVERHEAD = 64;

/**
 * About how much a view holds, for the view cache's bound (src/core/view-cache.ts): the characters
 * of its texts (UTF-16 code units), the bytes of its files, the characters of its data parts as
 * JSON, and {@link PART_OVERHEAD} per part, message and artifact; a ListTasks page (`tasks`) the sum of its views'.
 */
export function viewWeight(view: TaskView | { tasks: TaskView[] }): number {
  if ('tasks' in view) return view.tasks.reduce((w, t) => w + viewWeight(t), PART_OVERHEAD);
  const parts = (ps: PartView[]): number => {
    let w = 0;
    for (const p of ps) w += PART_OVERHEAD + (p.kind === 'text' ? p.text.length : p.kind === 'file' ? p.bytes.length : (JSON.stringify(p.data)?.length ?? 0));
    return w;
  };
  let w = PART_OVERHEAD + parts(view.status);
  for (const a of view.artifacts) w += PART_OVERHEAD + a.description.length + parts(a.parts);
  for (const m of view.history) w += PART_OVERHEAD + parts(m.parts);
  return w;
}

/** Puts a note of the bridge before the status message (a new first part when the message starts with agent text). */
export function prependStatusNote(view: TaskView, note: string): void {
  const first = view.status[0];
  if (first?.kind === 'text' && first.meta?.source === 'bridge') first.text = `${note}\n${first.text}`;
  else view.status.unshift(bridgePart(note));
}

/** What a view reads: the store, the clock, the config's poll words and mailbox settings, the mailbox's folder. */
export type ViewContext = Pick<BridgeContext, 'store' | 'config' | 'now' | 'metrics'> & { mailbox: Pick<BridgeContext['mailbox'], 'folder'> };

/** A task's replies and attachments, read once per view. */
interface Replies {
  byLedger: Map<number, ReplyRow>;
  attachments: Map<number, AttachmentInfo[]>;
  /** Reads an attachment's content when its part is built. */
  content: AttachmentContent;
  /** Fences a stored reply's text once per reply, not per view (src/core/fence-memo.ts). */
  fence: FenceFn;
}

/**
 * The replies a view reads: all of the task's, or with `shownOnly` (a view without history) only
 * those its artifacts and status message show, the current turn's reply being `shownOnly.ledgerId`
 * (store/replies.ts `shownOfTask`): a task's progress notes are never read whole for a status
 * update (attack review 8).
 */
function readReplies(ctx: ViewContext, taskId: string, shownOnly?: { ledgerId: number | null }): Replies {
  const rows = shownOnly ? ctx.store.replies.shownOfTask(taskId, shownOnly.ledgerId) : ctx.store.replies.ofTask(taskId);
  const byLedger = new Map(rows.map((r) => [r.ledgerId, r]));
  const attachments = new Map<number, AttachmentInfo[]>();
  for (const a of ctx.store.replies.attachmentsOf(taskId)) attachments.set(a.ledgerId, [...(attachments.get(a.ledgerId) ?? []), a]);
  const fence: FenceFn = (agent, reply, text) => fenceMemo.fence(agent.untrustedLabel, reply, text, () => ctx.metrics?.viewRenders.inc({ stage: 'fence' }));
  return { byLedger, attachments, content: (a) => ctx.store.replies.content(a.ledgerId, a.seq), fence };
}

/**
 * A reply stored before replies had rows of their own (migration 7): its labelled text, shown as
 * the agent's under a nonce drawn for this view.
 */
function legacyReply(ledgerId: number | null, taskId: string, text: string, at: number): ReplyRow {
  return { ledgerId: ledgerId ?? 0, taskId, turn: 0, agent: '', kind: 'done', nonce: newFenceNonce(), text, omittedLines: 0, createdAt: at };
}

function messageView(agent: AgentConfig, r: Replies, m: MessageViewRow, configFile: string): MessageView {
  const head = { messageId: m.messageId, contextId: m.contextId, taskId: m.taskId, role: m.role };
  if (m.role === 'user') return { ...head, parts: [callerPart(m.text)] };
  const reply = m.ledgerId != null ? r.byLedger.get(m.ledgerId) : undefined;
  if (!reply) return { ...head, parts: [agentTextPart(agent, legacyReply(Number(/^reply-(\d+)$/.exec(m.messageId)?.[1] ?? 0), m.taskId, m.text, m.createdAt), m.text)] };
  const attachments = r.attachments.get(reply.ledgerId) ?? [];
  const inArtifact = reply.kind === 'done' || reply.kind === 'failed' || reply.kind === 'late';
  return {
    ...head,
    parts: [
      agentTextPart(agent, reply, reply.text, r.fence),
      ...replyNotes(reply, attachments, inArtifact ? 'artifact' : 'below', configFile),
      ...(inArtifact ? [] : attachments.flatMap((a) => attachmentParts(agent, a, r.content, configFile))),
    ],
  };
}

const DESCRIPTIONS = {
  done: "The agent's reply",
  failed: "The agent's report that it could not do the job",
  late: 'An authenticated reply that arrived after the task failed; not applied',
  attachments: "The files and data attached to the agent's reply",
};

/** An artifact and when its reply came (the order of a task's artifacts). */
type Dated = ArtifactView & { at: number };

/** The artifacts of the replies that finished the task or came late: the reply, then its attachments. */
function replyArtifacts(agent: AgentConfig, task: TaskRow, r: Replies, withContent: boolean, configFile: string): Dated[] {
  const out: Dated[] = [];
  for (const reply of r.byLedger.values()) {
    if (reply.kind !== 'done' && reply.kind !== 'failed' && reply.kind !== 'late') continue;
    const attachments = r.attachments.get(reply.ledgerId) ?? [];
    const late = reply.kind === 'late';
    const lateNote = late
      ? [bridgePart(`This reply arrived ${iso(reply.createdAt)}, after the task failed (${task.failedBy ?? 'deadline'}). The bridge kept it and did not apply it; the task stays FAILED.`, { ledgerId: reply.ledgerId })]
      : [];
    out.push({
      at: reply.createdAt,
      artifactId: `${late ? 'late-reply' : 'reply'}-${reply.ledgerId}`,
      name: late ? 'late-reply' : 'reply',
      description: DESCRIPTIONS[reply.kind],
      late,
      parts: [...lateNote, agentTextPart(agent, reply, reply.text, r.fence), ...replyNotes(reply, attachments, 'artifact', configFile)],
    });
    if (attachments.length > 0) {
      out.push({
        at: reply.createdAt,
        artifactId: attachmentsArtifactId(reply.ledgerId),
        name: 'attachments',
        description: DESCRIPTIONS.attachments,
        late,
        parts: withContent ? attachments.flatMap((a) => attachmentParts(agent, a, r.content, configFile)) : [],
      });
    }
  }
  return out;
}

function legacyArtifact(agent: AgentConfig, a: ArtifactRow): Dated {
  const late = a.name === 'late-reply';
  return { at: a.createdAt, artifactId: a.artifactId, name: a.name, description: late ? DESCRIPTIONS.late : DESCRIPTIONS.done, late, parts: [agentTextPart(agent, legacyReply(a.ledgerId, a.taskId, a.text, a.createdAt), a.text)] };
}

/** Cuts `s` to at most `max` code units without splitting a surrogate pair. */
function head(s: string, max: number): string {
  if (s.length <= max) return s;
  const c = s.charCodeAt(max - 1);
  return s.slice(0, c >= 0xd800 && c <= 0xdbff ? max - 1 : max);
}

/** A reply for a waiting task deferred at gate 7 (src/core/deferrals.ts): since when. */
function deferredFacts(store: Store, task: TaskRow): { deferredSince?: number } {
  if (task.state !== 'WORKING') return {};
  const since = deferralsOf(store).taskWaitsSince(task.id);
  return since === null ? {} : { deferredSince: since };
}

/** The status message: the bridge's text, then the agent's question or progress note in its own part, and the bridge's notes on that reply. */
function statusParts(ctx: ViewContext, agent: AgentConfig, task: TaskRow, turn: TurnStatus | undefined, r: Replies, artifacts: readonly Dated[]): PartView[] {
  const { store } = ctx;
  const current = turn?.replyLedgerId != null && turn.replyText !== null ? (r.byLedger.get(turn.replyLedgerId) ?? legacyReply(turn.replyLedgerId, task.id, turn.replyText, turn.repliedAt ?? task.updatedAt)) : undefined;
  const progress = task.state === 'WORKING' && turn?.replyStatus === 'working' && current ? current : undefined;
  const question = task.state === 'INPUT_REQUIRED' && turn?.replyStatus === 'input-required' && current ? current : undefined;
  // A task the agent declined: its answer, if it wrote one, is the reason (A2A v1.0 §4.1.2
  // TaskStatus: "a message associated with the status"; no artifact, the agent produced nothing).
  const declined = task.state === 'REJECTED' && turn?.replyStatus === 'rejected' && current ? current : undefined;
  const reason = declined && declined.text.trim() !== '' ? declined : undefined;
  const shown = progress ? head(progress.text, PROGRESS_NOTE_MAX_CHARS) : '';
  const lastAttempt = turn && task.state === 'SUBMITTED' ? store.attempts.last(turn.dispatchId) : undefined;
  const late = artifacts.find((a) => a.late && a.name === 'late-reply');
  // Refused replies matter while the task waits for the agent, and when it failed waiting (deadline).
  const waiting = task.state === 'SUBMITTED' || task.state === 'WORKING' || (task.state === 'FAILED' && task.failedBy === 'deadline');
  const refused = turn && waiting ? store.ledger.refusedRepliesOf(task.id, turn.turn) : undefined;
  const report = task.state === 'FAILED' && task.failedBy === 'agent' ? artifacts.find((a) => a.name === 'reply' && !a.late) : undefined;
  const text = statusText({
    task,
    agent,
    turn,
    lastAttempt,
    mailbox: store.mailbox.state(ctx.mailbox.folder),
    progressNote: progress ? { at: progress.createdAt, shownChars: shown.length, totalChars: progress.text.length } : null,
    question: question !== undefined,
    ...(declined ? { declined: reason ? 'with-reason' : 'without-reason' } : {}),
    ...(report ? { reportArtifact: report.artifactId } : {}),
    lateReplyAt: late ? late.at : null,
    ...(late ? { lateReplyArtifact: late.artifactId } : {}),
    pollWord: ctx.config.server.pollWords.find((w) => w !== ''),
    ...(refused ? { refused } : {}),
    ...deferredFacts(store, task),
    checkIntervalMs: ctx.config.mailbox.checkIntervalMs,
    watch: ctx.config.mailbox.watch,
    configFile: ctx.config.file,
    now: ctx.now(),
  });
  const parts: PartView[] = text === null ? [] : [bridgePart(text)];
  const own = progress ?? question ?? reason;
  // A reply stored before replies had rows (legacyReply) has a nonce of this view's: fenced at once.
  if (own) parts.push(agentTextPart(agent, own, progress ? shown : own.text, r.byLedger.get(own.ledgerId) === own ? r.fence : undefined));
  // The notes on the reply (lines left out, attachments in the history) follow its part, or the
  // bridge's sentence when a declining agent wrote no reason.
  const noted = own ?? declined;
  if (noted) parts.push(...replyNotes(noted, r.attachments.get(noted.ledgerId) ?? [], 'history', ctx.config.file));
  return parts;
}

/**
 * Builds the view of a task from the store: every agent text cleaned and fenced, every part
 * marked (src/core/parts.ts, docs/agent-text.md).
 * @param historyLength newest messages to include; undefined means all, 0 means none
 * @param o.artifacts false: no artifacts (a list that leaves them out reads no attachment content)
 */
export function viewTask(ctx: ViewContext, agent: AgentConfig, task: TaskRow, historyLength?: number, o: { artifacts?: boolean } = {}): TaskView {
  const { store } = ctx;
  const turn = store.turns.status(task.id, task.turn);
  const r = readReplies(ctx, task.id, historyLength === 0 ? { ledgerId: turn?.replyLedgerId ?? null } : undefined);
  // Sorted by arrival (a stable sort: a reply's attachments stay after it).
  const dated = [...store.artifacts.of(task.id).map((a) => legacyArtifact(agent, a)), ...replyArtifacts(agent, task, r, o.artifacts !== false, ctx.config.file)].sort((a, b) => a.at - b.at);
  return {
    id: task.id,
    contextId: task.contextId,
    agent: task.agent,
    state: task.state,
    statusAt: task.updatedAt,
    turn: task.turn,
    createdAt: task.createdAt,
    deadlineAt: task.deadlineAt,
    status: statusParts(ctx, agent, task, turn, r, dated),
    artifacts: o.artifacts === false ? [] : dated.map((a) => ({ artifactId: a.artifactId, name: a.name, description: a.description, late: a.late, parts: a.parts })),
    history: historyLength === 0 ? [] : store.messages.historyView(task.id, historyLength).map((m) => messageView(agent, r, m, ctx.config.file)),
  };
}
