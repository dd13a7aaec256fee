import { describe, expect, it } from 'vitest';
import { listedFolders, MAX_LISTED_FOLDERS } from '../../../src/uplink/imap-folders.js';

/** A client whose LIST answers these folder paths (or fails). */
const lists = (paths: string[] | Error) => ({
  list: () => (paths instanceof Error ? Promise.reject(paths) : Promise.resolve(paths.map((path) => ({ path })) as never)),
});

describe('listedFolders: the folders a missing folder error lists', () => {
  it('quotes each name as server text, escapes controls, quotes and bidi characters, in the server order', async () => {
    expect(await listedFolders(lists(['INBOX', 'Sent', 'a"b', 'x\u001b[2Jy', 'r\u202etl']))).toBe('; the folders there: "INBOX", "Sent", "a\\"b", "x\\u001b[2Jy", "r\\u{202e}tl"');
  });

  it(`lists at most ${MAX_LISTED_FOLDERS} and counts the rest`, async () => {
    const many = Array.from({ length: 1000 }, (_, i) => `f${i}`);
    const said = await listedFolders(lists(many));
    expect(said.match(/"f\d+"/g)).toHaveLength(MAX_LISTED_FOLDERS);
    expect(said.endsWith(`"f${MAX_LISTED_FOLDERS - 1}" (and ${1000 - MAX_LISTED_FOLDERS} more)`)).toBe(true);
  });

  it('says nothing when the LIST fails or lists nothing', async () => {
    expect(await listedFolders(lists(new Error('BAD')))).toBe('');
    expect(await listedFolders(lists([]))).toBe('');
  });
});
