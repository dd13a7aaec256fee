/**
 * The parts a caller reads (docs/agent-text.md), independent of the wire dialect: src/a2a/wire.ts
 * and wire-v03.ts render them, and so will a stream. A part is the bridge's own words, the agent's
 * (cleaned, fenced, and marked untrusted in its metadata), or the caller's own text — never a mix.
 */
import type { AgentConfig } from '../config/config.js';
import { commandLine } from '../config/config-path.js';
import { plural } from '../plural.js';
import type { AttachmentInfo, ReplyRow } from '../store/replies.js';
import { cleanAgentData, cleanFilename, fenceAgentText, type TextChanges } from './untrusted-text.js';
import { replyMessageId } from './reply-message-id.js';

/** Metadata of a part that carries agent content: what a client reads instead of matching strings. */
export interface AgentMeta {
  untrusted: true;
  source: 'agent';
  /** The agent's name (config). */
  agent: string;
  /** The ledger row of the reply (`a2a-mailbridge ledger --raw <id>` shows the mail). */
  ledgerId: number;
  /** Text parts: the nonce on the fence's start and end lines. */
  fence?: string;
  /** File and data parts: the attachment's position in the reply (1-based). */
  attachment?: number;
  /** What cleaning changed (for a file, in its name). */
  changes: TextChanges;
  /** File parts: `/` and `\` in the name replaced with `_`. */
  pathSeparators?: number;
  /** File and data parts: the media type the agent wrote was not a well-formed `type/subtype`. */
  mediaTypeReplaced?: boolean;
}

/** Metadata of a part the bridge wrote. */
export interface BridgeMeta {
  untrusted: false;
  source: 'bridge';
  /** A note about one attachment: its reply and position. */
  ledgerId?: number;
  attachment?: number;
  /** The note says this attachment was refused. */
  refused?: boolean;
}

export type PartView =
  /** `meta` null: the caller's own text, shown back as it was sent. */
  | { kind: 'text'; text: string; meta: AgentMeta | BridgeMeta | null }
  | { kind: 'file'; filename: string | null; mediaType: string; bytes: Buffer; meta: AgentMeta }
  | { kind: 'data'; data: unknown; mediaType: string; meta: AgentMeta };

export function bridgePart(text: string, extra: Omit<BridgeMeta, 'untrusted' | 'source'> = {}): PartView {
  return { kind: 'text', text, meta: { untrusted: false, source: 'bridge', ...extra } };
}

export function callerPart(text: string): PartView {
  return { kind: 'text', text, meta: null };
}

/** Fences a reply's text (or a head of it) for its agent: {@link fenceAgentText}, or the same through src/core/fence-memo.ts. */
export type FenceFn = (agent: AgentConfig, reply: Pick<ReplyRow, 'ledgerId' | 'nonce'>, text: string) => { text: string; changes: TextChanges };

const fenceNow: FenceFn = (agent, reply, text) => fenceAgentText(text, { label: agent.untrustedLabel, nonce: reply.nonce });

/**
 * The agent text of a reply as one fenced part (docs/agent-text.md, "The fence").
 * @param text what to show (the reply's text, or a part of it)
 * @param fence fences it: at once by default; a view of stored replies passes the memo's (src/core/fence-memo.ts)
 */
export function agentTextPart(agent: AgentConfig, reply: Pick<ReplyRow, 'ledgerId' | 'nonce'>, text: string, fence: FenceFn = fenceNow): PartView {
  const { text: fenced, changes } = fence(agent, reply, text);
  return { kind: 'text', text: fenced, meta: { untrusted: true, source: 'agent', agent: agent.name, ledgerId: reply.ledgerId, fence: reply.nonce, changes } };
}

/** RFC 2045 §5.1 `type/subtype` tokens, lower case, bounded (RFC 6838 §4.2: 127 each). */
const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

function mediaTypeOf(written: string): { mediaType: string; replaced: boolean } {
  const t = written.trim().toLowerCase();
  return MEDIA_TYPE.test(t) ? { mediaType: t, replaced: false } : { mediaType: 'application/octet-stream', replaced: true };
}

/** An attachment's content, read when its part is built (src/store/replies.ts `content`). */
export type AttachmentContent = (a: AttachmentInfo) => { bytes: Buffer | null; data: string | null };

/**
 * The parts of one stored attachment: a file or data part, preceded by the bridge's note when it has one; a refusal is a note only.
 * @param configFile the bridge's config file, for the operator's command a note names (src/config/config-path.ts)
 */
export function attachmentParts(agent: AgentConfig, a: AttachmentInfo, content: AttachmentContent, configFile: string): PartView[] {
  const at = { ledgerId: a.ledgerId, attachment: a.seq };
  if (a.kind === 'refused') {
    return [bridgePart(`The bridge refused attachment ${a.seq} of this reply: ${a.reason ?? 'refused'}. ${commandLine(configFile, `ledger --raw ${a.ledgerId}`)} shows the whole mail.`, { ...at, refused: true })];
  }
  const { mediaType, replaced } = mediaTypeOf(a.mediaType);
  const note = a.reason !== null ? [bridgePart(`The bridge kept attachment ${a.seq} of this reply as a file: ${a.reason}.`, at)] : [];
  const stored = content(a);
  if (a.kind === 'data' && stored.data !== null) {
    const { data, changes } = cleanAgentData(JSON.parse(stored.data));
    return [...note, { kind: 'data', data, mediaType, meta: { untrusted: true, source: 'agent', agent: agent.name, ...at, changes, mediaTypeReplaced: replaced } }];
  }
  const name = cleanFilename(a.filename ?? '');
  return [
    ...note,
    {
      kind: 'file',
      filename: name.filename,
      mediaType,
      bytes: stored.bytes ?? Buffer.alloc(0),
      meta: { untrusted: true, source: 'agent', agent: agent.name, ...at, changes: name.changes, pathSeparators: name.pathSeparators, mediaTypeReplaced: replaced },
    },
  ];
}

/** The id of the artifact holding a reply's attachments. */
export function attachmentsArtifactId(ledgerId: number): string {
  return `attachments-${ledgerId}`;
}

/**
 * Where a reply's attachments are shown: the artifact `attachments-<ledger id>` (a reply that
 * finished the task, or came late), the parts after the note (the reply's history message), or
 * that history message (the note of a status message).
 */
export type AttachmentsAt = 'artifact' | 'below' | 'history';

/**
 * The bridge's notes about a reply: what the reply format left out, and where its attachments are.
 * @param configFile the bridge's config file, for the operator's command a note names (src/config/config-path.ts)
 */
export function replyNotes(reply: ReplyRow, attachments: readonly AttachmentInfo[], at: AttachmentsAt, configFile: string): PartView[] {
  const notes: PartView[] = [];
  if (reply.omittedLines > 0) {
    notes.push(
      bridgePart(
        `The bridge left out ${plural(reply.omittedLines, 'line')} after the answer as quoted text or a signature; ${commandLine(configFile, `ledger --raw ${reply.ledgerId}`)} shows the whole mail.`,
        { ledgerId: reply.ledgerId },
      ),
    );
  }
  if (attachments.length > 0) {
    const files = attachments.filter((a) => a.kind === 'file').length;
    const data = attachments.filter((a) => a.kind === 'data').length;
    const refused = attachments.length - files - data;
    const what = [files ? plural(files, 'file') : '', data ? plural(data, 'data part') : '', refused ? plural(refused, 'refused attachment') : ''].filter(Boolean).join(', ');
    const where =
      at === 'artifact' ? `in the artifact ${attachmentsArtifactId(reply.ledgerId)}` : at === 'below' ? 'in the parts after this one' : `in the task history, message ${replyMessageId(reply.ledgerId)}`;
    notes.push(bridgePart(`The bridge put this reply's attachments (${what}) ${where}.`, { ledgerId: reply.ledgerId }));
  }
  return notes;
}
