/**
 * The messageId of an agent's reply in its task's history, and of its `messages` row:
 * `reply-<ledger id>` (docs/agent-text.md, "Where each text travels"). Those rows share the
 * callers' messageIds (the table's UNIQUE (agent, message_id)), so a caller may not send a
 * messageId of this form (src/core/submit.ts): a message stored under `reply-<n>`, in any context
 * of the agent, made the apply of the reply given ledger row n fail on that constraint, the reply
 * recorded `unreadable` and its task left waiting (attack review 8).
 */

/** `reply-<ledger id>`. */
export function replyMessageId(ledgerId: number): string {
  return `reply-${ledgerId}`;
}

const REPLY_MESSAGE_ID = /^reply-[1-9][0-9]*$/;

/** Whether `messageId` has the form {@link replyMessageId} gives (a positive ledger id, no leading zero). */
export function isReplyMessageId(messageId: string): boolean {
  return REPLY_MESSAGE_ID.test(messageId);
}
