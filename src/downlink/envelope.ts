/**
 * The webhook envelope (docs/architecture.md, "The webhook envelope"): the JSON body that wakes the
 * cloud agent. It is serialised once, stored with the turn, and the same bytes are signed and sent
 * on every attempt (a signature covers exact bytes: never re-serialise).
 */
import { REPLY_STATUS_WORDS } from '../uplink/reply-format.js';

/** One earlier turn of the task, oldest first: what the caller asked and what the agent answered. */
export interface ThreadEntry {
  turn: number;
  role: 'user' | 'agent';
  /** The caller's or the agent's text only; cut at its end when `omitted_bytes` is present. */
  text: string;
  /** Present on the oldest entry carried when the thread's byte budget cut it: the UTF-8 bytes of its text left out at its end. */
  omitted_bytes?: number;
}

export interface Envelope {
  /** Envelope format version. */
  v: 1;
  task_id: string;
  /** 1-based turn of the task this dispatch carries. */
  turn: number;
  /** 32 lowercase hex characters; the reply must carry it on a `reply_token:` line. */
  reply_token: string;
  /** Who is asking: the bridge's configured name. */
  from: string;
  /** This turn's text from the caller. */
  ask: string;
  /**
   * The earlier turns of the task, newest kept first, within a byte budget of text
   * (src/core/envelope-thread.ts: 512 KiB).
   */
  thread: ThreadEntry[];
  /** Present when the budget left earlier entries out: how many, before the first of `thread`. */
  thread_omitted?: number;
  /** Reply-format instructions for the agent, in plain text (section 5 of the brief). */
  constraints: string;
  /** ISO-8601 UTC deadline of this turn. */
  deadline: string;
  /** The mailbox address the reply must be sent to. */
  reply_to: string;
  /** The subject tag the reply's Subject must contain, e.g. `[GROK:<task_id>]`. */
  subject_tag: string;
  /** Present and true on a cancel notice: stop work on `task_id`; no reply is expected. */
  cancel?: true;
}

/** The subject tag of a task: `[<TAG>:<task id>]` (docs/architecture.md, "The reply format"). */
export function subjectTag(tag: string, taskId: string): string {
  return `[${tag}:${taskId}]`;
}

/**
 * The reply-format instructions carried in `constraints` (docs/architecture.md, "The reply format";
 * attachments: docs/agent-text.md, "Files and data").
 * @param o.from the agent's `address`: the only From the gates accept (gate 4)
 * @param o.maxAttachmentBytes `mailbox.max_attachment_bytes` (default 1 MiB)
 */
export function replyInstructions(o: { replyTo: string; from: string; subjectTag: string; token: string; deadline: string; maxAttachmentBytes?: number }): string {
  const max = o.maxAttachmentBytes ?? 1024 * 1024;
  return [
    `Reply by email to ${o.replyTo}, from ${o.from} (mail from any other address is refused), before ${o.deadline}.`,
    `The Subject must contain ${o.subjectTag} exactly once.`,
    'The body (text/plain preferred) must start with these lines, before any quoted text:',
    `reply_token: ${o.token}`,
    `status: ${REPLY_STATUS_WORDS.join(' | ')}`,
    '---',
    'Then your whole answer after the "---" line. Use "input-required" to ask the caller a question,',
    '"working" for a progress note (send the final reply later, with the same reply_token), "failed" if you tried and could not do the job,',
    '"rejected" if you will not do it (your reason after the "---" line).',
    `Files go as attachments of the same email, each at most ${max} bytes (a larger one is refused whole, not cut).`,
    'An attachment of type application/json holding valid JSON (at most 32 levels deep, 1 MiB) reaches the caller as structured data.',
    'The caller is shown your text as untrusted, between marker lines; write plain text without hidden or control characters.',
    'Do not quote this request in the reply.',
  ].join('\n');
}

/** Serialises an envelope to the exact bytes that are stored, signed and sent. */
export function encodeEnvelope(e: Envelope): Buffer {
  return Buffer.from(JSON.stringify(e), 'utf8');
}
