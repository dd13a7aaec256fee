/**
 * Text from the agent's mail goes into a caller's conversation (often a terminal or a model
 * prompt). Control characters have no business there: an ANSI escape can rewrite what a person
 * sees, a NUL can truncate it. Tabs and line breaks are kept; other C0 controls, DEL and C1
 * controls are removed.
 */
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/g;

export function safeText(s: string): string {
  return s.replace(/\r\n?/g, '\n').replace(CONTROLS, '');
}

/** Caps a text shown inline (a status message), pointing at where the whole text is. */
export function capText(s: string, maxChars: number, where: string): string {
  return s.length <= maxChars ? s : `${s.slice(0, maxChars)}\n… (${s.length - maxChars} more characters; the whole text is in ${where})`;
}
