/**
 * A TOML syntax error as a person fixes it: the parser's problem (smol-toml's message, line and
 * column), a hint where its words do not say what is wrong, and the line itself.
 */

/** A quote that opens a string (TOML v1.0, "String"): basic, literal, and their multi-line forms. */
type Quote = '"' | "'" | '"""' | "'''";

/**
 * The string left open at the end of each line of `text` (index 0: line 1), or null where none is:
 * a single-line string open at a line's end is never valid (a closing quote is missing), a
 * multi-line one is open until its closing quotes. Comments (`#` outside a string) are skipped, and
 * a backslash escapes the next character in basic strings.
 */
export function openQuotes(text: string): (Quote | null)[] {
  const open: (Quote | null)[] = [];
  let q: Quote | null = null;
  for (const line of text.split(/\r?\n/)) {
    // A single-line string ends with its line (the parser stops there); a multi-line one goes on.
    if (q === '"' || q === "'") q = null;
    for (let i = 0; i < line.length; i++) {
      const c = line[i]!;
      if (q === null) {
        if (c === '#') break;
        if (c === '"' || c === "'") {
          q = line.startsWith(c.repeat(3), i) ? (c.repeat(3) as Quote) : c;
          i += q.length - 1;
        }
      } else if (c === '\\' && q.startsWith('"')) i++;
      else if (line.startsWith(q, i)) {
        i += q.length - 1;
        q = null;
      }
    }
    open.push(q);
  }
  return open;
}

/**
 * `<problem>; <fix>`: the parser's first line with its line and column, then the line itself (cut
 * to 120 characters). At a line that leaves a string open (a single-line string unclosed at its
 * end, or a multi-line one never closed), the problem asks whether a closing quote is missing:
 * the parser names only what it met inside the string, such as the line end ("control characters
 * are not allowed in strings").
 * @param err what smol-toml's `parse` threw (its `line` and `column` are 1-based)
 */
export function tomlSyntaxMessage(file: string, text: string, err: unknown): string {
  const at = err as { line?: number; column?: number; message?: string };
  const first = String(at.message ?? err).split('\n')[0]!.replace(/^Invalid TOML document: /, '');
  if (at.line === undefined) return `${file} is not valid TOML: ${first}; correct the TOML syntax`;
  const where = `line ${at.line}${at.column !== undefined ? `, column ${at.column}` : ''}`;
  const lineText = (text.split(/\r?\n/)[at.line - 1] ?? '').trim();
  const shown = lineText.length > 120 ? `${lineText.slice(0, 119)}…` : lineText;
  const open = openQuotes(text);
  const left = open[at.line - 1] ?? null;
  // A multi-line string opened on this line counts only when nothing after it closes it.
  const unclosed = left !== null && (left.length === 1 || open.slice(at.line - 1).every((q) => q === left));
  const hint = unclosed ? ` — is a closing quote (${left}) missing?` : '';
  return `${file} is not valid TOML at ${where}: ${first}${hint}; correct ${where}: ${shown}`;
}
