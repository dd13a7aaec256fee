/**
 * A reply's attachments (docs/agent-text.md, "Files and data"): each MIME part mailparser does not
 * take as the body becomes a file, a JSON data part, or a refusal with its reason — never cut.
 *
 * - up to `mailbox.max_attachment_bytes`: a file (its bytes, its media type, its name);
 * - `application/json` or `application/<x>+json`, valid JSON, at most {@link MAX_DATA_DEPTH} deep
 *   and {@link MAX_DATA_BYTES} long: a data part (the JSON, re-serialised); otherwise a file, with
 *   the reason it is not a data part;
 * - larger than `mailbox.max_attachment_bytes`, or beyond the {@link MAX_ATTACHMENTS}th: refused.
 *
 * Reasons are the bridge's words only: never a parser message (JSON.parse quotes the input).
 * Everything here is linear in the bytes; nothing recurses on the JSON's nesting.
 */

/** An attachment as mailparser decoded it. */
export interface RawAttachment {
  /** As the part named it (Content-Disposition or Content-Type `name`), or null. */
  filename: string | null;
  /** The part's media type (mailparser lower-cases it; `application/octet-stream` guessed from the name). */
  contentType: string;
  content: Uint8Array;
}

/** One attachment as the bridge keeps it. `filename` and `mediaType` are as the agent wrote them. */
export type ReplyAttachment =
  | { kind: 'file'; filename: string | null; mediaType: string; size: number; bytes: Uint8Array; reason: string | null }
  | { kind: 'data'; filename: string | null; mediaType: string; size: number; json: string }
  | { kind: 'refused'; filename: string | null; mediaType: string; size: number; reason: string };

/** Deepest JSON kept as a data part (the caller-input cap of src/a2a/params.ts). */
export const MAX_DATA_DEPTH = 32;
/** Longest JSON kept as a data part, in bytes. */
export const MAX_DATA_BYTES = 1024 * 1024;
/** Attachments kept per reply; the ones after are refused. */
export const MAX_ATTACHMENTS = 100;

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json$/;

/**
 * How deep `text` nests (`[` and `{` outside strings), counting up to `limit + 1`; one pass, no
 * parse. Malformed text gives a number too; JSON.parse then decides.
 */
export function jsonDepth(text: string, limit: number): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth > max) max = depth;
      if (max > limit) return max;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

function asData(a: RawAttachment, mediaType: string, size: number): ReplyAttachment {
  const keep = (reason: string): ReplyAttachment => ({ kind: 'file', filename: a.filename, mediaType, size, bytes: a.content, reason });
  if (size > MAX_DATA_BYTES) return keep(`a JSON part larger than ${MAX_DATA_BYTES} bytes is kept as a file, not a data part`);
  const text = new TextDecoder('utf-8', { fatal: false }).decode(a.content).replace(/^\uFEFF/, '');
  if (jsonDepth(text, MAX_DATA_DEPTH) > MAX_DATA_DEPTH) return keep(`JSON nested deeper than ${MAX_DATA_DEPTH} levels is kept as a file, not a data part`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return keep('not valid JSON: kept as a file, not a data part');
  }
  return { kind: 'data', filename: a.filename, mediaType, size, json: JSON.stringify(value) };
}

/**
 * What the bridge keeps of each attachment, in order.
 * @param maxBytes `mailbox.max_attachment_bytes`
 */
export function classifyAttachments(list: readonly RawAttachment[], maxBytes: number): ReplyAttachment[] {
  return list.map((a, i): ReplyAttachment => {
    const size = a.content.byteLength;
    const mediaType = a.contentType.toLowerCase();
    const refused = (reason: string): ReplyAttachment => ({ kind: 'refused', filename: a.filename, mediaType, size, reason });
    if (i >= MAX_ATTACHMENTS) return refused(`more than ${MAX_ATTACHMENTS} attachments in one reply; refused, not cut`);
    if (size > maxBytes) return refused(`${size} bytes, over mailbox.max_attachment_bytes (${maxBytes}); refused whole, never cut`);
    if (JSON_TYPE.test(mediaType)) return asData(a, mediaType, size);
    return { kind: 'file', filename: a.filename, mediaType, size, bytes: a.content, reason: null };
  });
}
