/**
 * An IMAP answer larger than the client accepts: imapflow ends the connection with `LineTooLarge`
 * (a line over `maxLineLength`), `LiteralTooLarge` (`maxLiteralSize`) or `ResponseTooLarge`
 * (`maxResponseSize`), and the command under way then rejects with `NoConnection`, which alone
 * reads as a network failure. The connection was fine: the server's answer was too large. This
 * file names the command and says where such an answer can still come from and what the operator
 * can change, for every IMAP reader (imap-mailbox.ts, and newest-from.ts by its code).
 */
import type { ImapFlowError } from 'imapflow';
import { SEARCH_WINDOW_UIDS } from './imap-search.js';
import type { Phase } from './imap-session.js';

/** imapflow's codes for an answer over one of its size limits (imapflow types.d.ts, `maxLineLength` and beside). */
export const TOO_LARGE_CODES = new Set(['LineTooLarge', 'LiteralTooLarge', 'ResponseTooLarge']);

/** imapflow's size-limit error: the limit passed and, for a literal, the size announced (bytes). */
type TooLargeError = ImapFlowError & { maxSize?: number; literalSize?: number };

/** The command each phase sends, as the operator would see it in an IMAP log. */
const COMMAND: Record<Phase, string> = { connect: 'the greeting', login: 'LOGIN', examine: 'EXAMINE (or STATUS)', search: 'UID SEARCH', fetch: 'UID FETCH' };

const n = (bytes: number | undefined): string => (bytes === undefined || !Number.isFinite(bytes) ? '?' : bytes.toLocaleString('en-US'));

/** The first of `errors` whose code is one of {@link TOO_LARGE_CODES}; undefined when none. */
export function tooLargeError(...errors: (ImapFlowError | undefined)[]): ImapFlowError | undefined {
  return errors.find((e) => e?.code !== undefined && TOO_LARGE_CODES.has(e.code));
}

/**
 * One line for an answer over a limit: the server, the command and folder, the size against the
 * limit, where the bridge's own commands keep their answers within it (so what this one means),
 * and what the operator can change. Nothing was read; the next check sends the same command.
 * @param err an error whose code is one of {@link TOO_LARGE_CODES}
 * @param where `host:port`
 */
export function tooLargeMessage(err: ImapFlowError, phase: Phase, where: string, folder: string): string {
  const e = err as TooLargeError;
  const accepted = `the ${n(e.maxSize)} bytes this client accepts`;
  const what = e.code === 'LineTooLarge' ? `a line longer than ${accepted}` : e.code === 'LiteralTooLarge' ? `a literal of ${n(e.literalSize)} bytes, over ${accepted}` : `an answer longer than ${accepted}`;
  const head = `IMAP server ${where} answered ${COMMAND[phase]}${phase === 'search' || phase === 'fetch' ? ` in ${folder}` : ''} with ${what} (not a network fault); nothing was read`;
  if (phase === 'search') {
    // imap-search.ts: a SEARCH asks for at most SEARCH_WINDOW_UIDS UIDs, whose answer is within the line limit.
    return `${head}. The search asks for at most ${n(SEARCH_WINDOW_UIDS)} UIDs at a time, whose answer fits, so the server answered UIDs outside the range asked (or a flood of messages arrived during the check); each check fails the same way until the folder answers less: move mail out of ${folder}, or point mailbox.folder at a folder the agents' replies alone are filed into (a server-side filter)`;
  }
  if (phase === 'fetch') {
    return `${head}. A message's data is asked within mailbox.max_message_bytes by its RFC822.SIZE, so the server sent more than it announced; each check fails the same way while that message is in the folder (one above the last read whose From or Subject names an agent): move it aside`;
  }
  return `${head}. No answer this large is expected to ${COMMAND[phase]}: check that mailbox.imap.host and port name the IMAP server meant`;
}
