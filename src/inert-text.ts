/**
 * Header-derived text put into a verdict reason, made inert for whoever reads the reason
 * (`show`, `ledger`, a log): every space character other than U+0020 (`Zs`: NO-BREAK SPACE, the
 * EN/EM/THIN spaces, IDEOGRAPHIC SPACE…) and every format character (`Cf`: bidi marks and
 * isolates, zero-width characters, tag characters) is written as a visible `\u{…}` escape, the
 * form cli/format.ts `clean` writes. A sender's Received `from` word may hold such characters (the
 * Received parser splits words on ASCII white space alone, RFC 5322 §3.2.2), and in a reason they
 * would pass for the bridge's own spacing: the makings of a fake column or row in `show` (attack
 * review 6, F6). The result holds neither; the bridge's own words hold none, so applying this to a
 * whole reason changes only what came from mail. So is U+2800 BRAILLE PATTERN BLANK, which no
 * category above holds and most fonts draw as a space, and the box-drawing block (U+2500–257F),
 * whose lines draw as a table's (attack review 7, F5). Linear; idempotent.
 */
const INERT = /[\p{Cf}\p{Zs}\u2800\u2500-\u257f]/gu;

export function inertText(text: string): string {
  return text.replace(INERT, (c) => (c === ' ' ? c : `\\u{${c.codePointAt(0)!.toString(16)}}`));
}

/** `outcome` with its `reason` made inert ({@link inertText}): the same object when nothing changed. */
export function inertReason<T extends { reason: string }>(outcome: T): T {
  const reason = inertText(outcome.reason);
  return reason === outcome.reason ? outcome : { ...outcome, reason };
}
