/**
 * Every verdict the gate stack can record, in gate order, then the message the mailbox or the
 * judge cannot read (the defect, the mailbox's reasons, a header block that cannot be read as one:
 * docs/architecture.md, "The gates"). One table: the ledger, the CLI filters, `/health` and the
 * metrics all read these names.
 */
export const VERDICTS = {
  duplicate: "gate 1 / 8a: the same raw bytes (of a header block refused on its provider's stamp: the same first 16 KiB), a replay of authenticated mail (its DKIM signature and Message-ID), or a Message-ID already applied to this task",
  'too-large': 'the message is larger than mailbox.max_message_bytes; refused whole, never cut',
  'no-task-id': 'gate 2: not exactly one subject tag naming a task id (or Subjects holding more than 8 KiB of encoded words, not decoded); untagged mail is never instructions',
  'auth:duplicate-header': 'gate 3: From, Subject, Date and Message-ID must each appear exactly once (more than two Subject fields: refused at gate 2, none read for a tag), Content-Type, Content-Transfer-Encoding and MIME-Version at most once, DKIM-Signature at most 8 times',
  'auth:from-mismatch': "gate 4: From is not the agent's configured address",
  'auth:no-border': 'gate 5: no Received by the provider from an outside host; nothing can be trusted',
  'auth:no-trusted-results': "gate 5: no Authentication-Results above the border stamped by the provider's authserv-id",
  'auth:dmarc-fail': 'gate 6: trusted dmarc is fail, temperror or permerror (or the trusted results conflict)',
  'auth:dkim-unaligned': 'gate 7: no trusted dkim=pass whose header.d is exactly the agent domain and matches a signature',
  'auth:dkim-unverified': 'gate 7: local DKIM verification did not pass the aligned signature',
  'unknown-task': 'gate 8: the tagged task does not exist for this agent',
  'auth:date-window': "gate 8: the Date header is unparsable, before the turn's dispatch or in the future (beyond mailbox.date_skew_s)",
  'unparsed:parts': "gate 9: the body was not read: more than 1,000 MIME parts, the message and each multipart counted (mailparser's cap: @zone-eu/mailsplit MAX_CHILD_NODES)",
  'unparsed:part-header': "gate 9: the body was not read: a MIME part's header over 1 MiB (mailparser's cap: @zone-eu/mailsplit MAX_HEAD_SIZE)",
  'unparsed:size': 'gate 9: the body was not read: the message is over the 32 MiB reply parse budget',
  'unparsed:time': "gate 9: the body was not read: its parse ran over the worker's 10 s budget",
  'unparsed:error': 'gate 9: the body was not read: the MIME parser failed on it',
  'no-token': 'gate 9: no single reply_token line in the reply block',
  'bad-token': "gate 9: the token is not the task's live token",
  'task-closed': 'gate 10: the task is not awaiting the agent',
  'late:recorded': 'gate 10: authenticated reply after a deadline failure; kept and shown, state stays FAILED',
  'bad-status': 'gate 11: the status line is not done, input-required, failed, rejected or working',
  'applied:done': 'promoted: the task is COMPLETED',
  'applied:input-required': 'promoted: the task is INPUT_REQUIRED',
  'applied:failed': 'promoted: the agent reported failure; the task is FAILED',
  'applied:rejected': 'promoted: the agent declined the task; the task is REJECTED',
  'applied:working': 'promoted: a progress note; the task stays WORKING',
  unreadable: 'the judge failed on the message (a defect of ours); recorded so it is never retried silently',
  'unreadable:permission': 'the mailbox holds the message but it cannot be opened (a Maildir file without read permission); deliver a readable copy to have it judged',
  'unreadable:vanished': 'the message was deleted from the mailbox (IMAP: expunged) after it was listed or its header block read, before it was read whole',
  'unreadable:io': 'the mailbox holds the message but reading it failed (an I/O error of that one file)',
  'unreadable:fetch': 'the IMAP server refused to FETCH the message, twice; the rest of the folder was read',
  'too-large-header': 'after gate 1 by the digest: the header block is over 256 KiB or 4,096 lines (or no empty line ends it within them); refused unread (the task tag is read from its first 16 KiB when they can be)',
  'unreadable:line-ends': 'after gate 1 by the digest: a CR without LF in the header block (CR-only line ends): its fields cannot be told apart; refused unread (the task tag is read from its first 16 KiB when they can be)',
  'unreadable:8bit': 'after gate 1 by the digest: header bytes that are neither US-ASCII nor UTF-8; refused unread (the task tag is read from its first 16 KiB when they can be)',
  'unreadable:no-body': 'after gate 1 by the digest: no empty line ends the header block, so the message has no body to read a reply from',
} as const;

export type Verdict = keyof typeof VERDICTS;

export function isApplied(v: Verdict): boolean {
  return v.startsWith('applied:');
}
