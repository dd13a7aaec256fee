import type { UnparsedCap } from './reply-format.js';

/** How mailparser's giving up on a message is told: the cap or failure, in the bridge's words. */

/**
 * Whether HTML has a character other than white space outside its `<…>` (tags, comments): one linear
 * pass that tells an HTML body with words in it from an empty one. Not a reading of its text
 * (mailparser's conversion is that); character references count as text.
 */
export function hasTextOutsideTags(html: string): boolean {
  let inTag = false;
  for (let i = 0; i < html.length; i++) {
    const c = html.charCodeAt(i);
    if (inTag) {
      if (c === 0x3e) inTag = false; // >
    } else if (c === 0x3c) inTag = true; // <
    else if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d && c !== 0x0c && c !== 0xa0) return true;
  }
  return false;
}

/**
 * Why the parser gave up on a message, in the bridge's words: its splitter's two limits by name
 * (`EMAXLEN`: more than 1,000 MIME parts, a part header over 1 MiB), anything else by the error's
 * class only — the text of another error could quote the mail.
 */
export function parserFailure(err: unknown): { why: string; cap: UnparsedCap } {
  const e = err as { code?: unknown; message?: unknown; name?: unknown };
  if (e?.code === 'EMAXLEN' && e.message === 'Max allowed child nodes exceeded') return { why: 'the MIME parser stops at 1,000 MIME parts (Max allowed child nodes exceeded)', cap: 'parts' };
  if (e?.code === 'EMAXLEN' && e.message === 'Max header size for a MIME node exceeded') return { why: 'the MIME parser stops at a part header over 1 MiB (Max header size for a MIME node exceeded)', cap: 'part-header' };
  return { why: `the MIME parser failed on it (${typeof e?.name === 'string' ? e.name : 'an error'})`, cap: 'error' };
}
