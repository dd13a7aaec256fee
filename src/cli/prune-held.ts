import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { listFolder, maildirSource } from '../uplink/maildir-files.js';
import { CliFailure } from './errors.js';

/**
 * The ledger sources of the files still in these Maildir folders (`maildir:<folder>:<key>`, keyed
 * as the Maildir reader keys them: uplink/maildir-files.ts `listFolder`): the rows `prune` keeps
 * thin rather than deletes, so a file it pruned is not judged again (src/store/prune-thin.ts;
 * docs/architecture.md, "Retention and the Maildir"). One listing of new/ and cur/ a folder.
 * A folder with neither new/ nor cur/ (deleted, or never a Maildir) holds no file.
 * @param folders the Maildir folders the ledger has rows of (`retention.maildirFolders()`)
 * @throws CliFailure when a folder is there but cannot be listed: prune cannot tell which of its
 *   files are still there, so it deletes nothing rather than have them judged again
 */
export async function heldMaildirSources(folders: readonly string[]): Promise<Set<string>> {
  const held = new Set<string>();
  for (const folder of folders) {
    const there = await Promise.all(['new', 'cur'].map((sub) => stat(join(folder, sub)).then(() => true, (err: NodeJS.ErrnoException) => err.code !== 'ENOENT')));
    if (!there.includes(true)) continue;
    let listing: Awaited<ReturnType<typeof listFolder>>;
    try {
      listing = await listFolder(folder);
    } catch (err) {
      throw new CliFailure(`prune needs to list the Maildir ${folder} to keep the verdicts of the mail still in it (else that mail is judged again), and could not: ${(err as Error).message}; nothing was pruned`);
    }
    for (const key of listing.keys()) held.add(maildirSource(folder, key));
  }
  return held;
}
