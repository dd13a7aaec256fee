import type { ImapFlow } from 'imapflow';
import { inertText } from '../inert-text.js';

/** How many folder names a missing folder's error lists (an account may hold thousands). */
export const MAX_LISTED_FOLDERS = 20;

/**
 * What to say after "IMAP folder X does not exist on host:port": the folders the server lists
 * (`LIST "" "*"`, RFC 3501 §6.3.8), in its order, at most {@link MAX_LISTED_FOLDERS} and a count of
 * the rest. A name is server text: each is quoted as a JSON string (its controls, quotes and
 * backslashes escaped) with its space and format characters escaped as src/inert-text.ts does, so
 * no name passes for the bridge's own words or for a second name.
 *
 * @returns `; the folders there: "INBOX", "Sent", … (and N more)`, or '' when the LIST fails or
 *   lists nothing; never throws
 */
export async function listedFolders(client: Pick<ImapFlow, 'list'>): Promise<string> {
  let paths: string[];
  try {
    paths = (await client.list()).map((f) => f.path);
  } catch {
    return '';
  }
  if (paths.length === 0) return '';
  const shown = paths.slice(0, MAX_LISTED_FOLDERS).map((p) => inertText(JSON.stringify(p)));
  const more = paths.length - shown.length;
  return `; the folders there: ${shown.join(', ')}${more > 0 ? ` (and ${more} more)` : ''}`;
}

/**
 * The message for a folder the server says does not exist (imapflow's `mailboxMissing`: EXAMINE
 * answered NO and LIST does not find the name): `IMAP folder <folder> does not exist on
 * <host>:<port>` and {@link listedFolders}. The one text for every place that opens the folder —
 * a check's first connection, its connection after the server hung up, provider detect — so the
 * fix reads the same wherever it was found.
 *
 * @param client the connection that was refused, still logged in (asked for LIST)
 * @returns the message (server text in it made inert); never throws
 */
export async function missingFolderMessage(client: Pick<ImapFlow, 'list'>, folder: string, server: { host: string; port: number }): Promise<string> {
  return `IMAP folder ${folder} does not exist on ${server.host}:${server.port}${await listedFolders(client)}`;
}
