/**
 * Text from the agent's mail goes into a caller's conversation (often a terminal or a model
 * prompt). Control characters have no business there: an ANSI escape can rewrite what a person
 * sees, a NUL can truncate it, a bidi override (U+202E) can reorder it. Tabs and line breaks
 * are kept; other C0 controls, DEL, C1 controls and the bidi embeddings, overrides and isolates
 * (U+202A–U+202E, U+2066–U+2069) are removed.
 */
// eslint-disable-next-line no-control-regex -- removing control characters is this pattern's job
const CONTROLS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

export function safeText(s: string): string {
  return s.replace(/\r\n?/g, '\n').replace(CONTROLS, '');
}

/** Caps a text shown inline (a status message), pointing at where the whole text is. */
export function capText(s: string, maxChars: number, where: string): string {
  return s.length <= maxChars ? s : `${s.slice(0, maxChars)}\n… (${s.length - maxChars} more characters; the whole text is in ${where})`;
}
