/**
 * A parser of one Authentication-Results field value (RFC 8601 §2.2). It walks the grammar
 * character by character, so text inside a quoted string or a comment (nested comments included,
 * RFC 5322 §3.2.2) can never become a result: `smtp.mailfrom="dkim=pass header.d=x"@evil.test` or
 * `(dkim=pass header.d=x)` stay a value and a comment (reflected text:
 * github.com/postalsys/mailauth/issues/74).
 *
 * Leniencies, each seen in real provider headers and each unable to create a result:
 * - a property without a ptype (`x-bits=2048`, `score=20`, Microsoft's `action=none`) is kept with
 *   `ptype: ''`;
 * - an unquoted property value is any run of characters other than whitespace, `(`, `)`, `;`,
 *   `"` and `\` (Google writes `header.b=AArzbi/1`, bounce addresses carry `=`);
 * - a result may hold `.` and `:` (Fastmail's `x-vs=transactional:account`);
 * - a trailing `;` and empty `;;` result slots are skipped.
 * Anything else off the grammar makes the whole field unparseable (null): a half-read field could
 * hide a `fail`.
 */

export interface AuthProp {
  /** `smtp`, `header`, `body`, `policy` (or another registered ptype), lower-cased; `''` when absent. */
  ptype: string;
  /** Lower-cased, e.g. `d`, `from`, `mailfrom`. */
  property: string;
  /** As written; a quoted string is unquoted (quoted-pairs resolved); `"a b"@x` becomes `a b@x`. */
  value: string;
}

export interface AuthResult {
  /** Lower-cased method, e.g. `dkim`, `spf`, `dmarc`. */
  method: string;
  /** The `/1` after a method (RFC 8601 §2.2 method-version), else null. */
  methodVersion: number | null;
  /** Lower-cased result, e.g. `pass`, `fail`, `none`. */
  result: string;
  /** The `reason=` value, unquoted, else null. */
  reason: string | null;
  props: AuthProp[];
}

export interface ParsedAuthResults {
  /** As written (unquoted when it was a quoted string). */
  authservId: string;
  /** The authres-version after the authserv-id, else null. */
  version: number | null;
  /** In field order; empty for `; none`. */
  results: AuthResult[];
}

/** Thrown inside the parser only; `parseAuthResults` turns it into null. */
class Malformed extends Error {}

const KEYWORD_CHAR = /[A-Za-z0-9_-]/;
const RESULT_CHAR = /[A-Za-z0-9_.:-]/;
const DIGIT = /[0-9]/;

/** RFC 2045 §5.1 token: no space, CTL or tspecial. Non-ASCII is allowed (RFC 6532). */
function isTokenChar(c: string): boolean {
  const code = c.charCodeAt(0);
  if (code <= 0x20 || code === 0x7f) return false;
  return !'()<>@,;:\\"/[]?='.includes(c);
}

/** Unquoted property values: any run without whitespace, parentheses, `;`, `"` or `\`. */
function isLooseValueChar(c: string): boolean {
  const code = c.charCodeAt(0);
  if (code <= 0x20 || code === 0x7f) return false;
  return !'();"\\'.includes(c);
}

class Reader {
  i = 0;
  constructor(readonly s: string) {}

  get done(): boolean {
    return this.i >= this.s.length;
  }

  peek(): string {
    return this.s[this.i] ?? '';
  }

  /** Skips whitespace, folding and comments (nested, with quoted-pairs). @returns whether anything was skipped. */
  cfws(): boolean {
    const from = this.i;
    while (!this.done) {
      const c = this.peek();
      if (c === ' ' || c === '\t' || c === '\r' || c === '\n') this.i++;
      else if (c === '(') this.comment();
      else break;
    }
    return this.i > from;
  }

  private comment(): void {
    let depth = 0;
    while (!this.done) {
      const c = this.s[this.i++];
      if (c === '\\') this.i++;
      else if (c === '(') depth++;
      else if (c === ')' && --depth === 0) return;
    }
    throw new Malformed('unterminated comment');
  }

  /** RFC 5322 §3.2.4 quoted-string, returned without quotes, quoted-pairs resolved, folding removed. */
  quoted(): string {
    if (this.peek() !== '"') throw new Malformed('expected a quoted string');
    this.i++;
    let out = '';
    while (!this.done) {
      const c = this.s[this.i++] ?? '';
      if (c === '"') return out;
      if (c === '\\') {
        if (this.done) break;
        out += this.s[this.i++];
      } else if (c !== '\r' && c !== '\n') out += c;
    }
    throw new Malformed('unterminated quoted string');
  }

  run(test: (c: string) => boolean): string {
    const from = this.i;
    while (!this.done && test(this.peek())) this.i++;
    return this.s.slice(from, this.i);
  }

  keyword(what: string): string {
    const k = this.run((c) => KEYWORD_CHAR.test(c));
    if (!k) throw new Malformed(`expected ${what}`);
    return k.toLowerCase();
  }

  digits(): number {
    const d = this.run((c) => DIGIT.test(c));
    if (!d) throw new Malformed('expected digits');
    return Number(d);
  }

  expect(c: string): void {
    if (this.peek() !== c) throw new Malformed(`expected "${c}"`);
    this.i++;
  }

  /** RFC 2045 value: token or quoted-string. */
  value(): string {
    if (this.peek() === '"') return this.quoted();
    const t = this.run(isTokenChar);
    if (!t) throw new Malformed('expected a value');
    return t;
  }

  /**
   * RFC 8601 pvalue: `[CFWS] ( value / [ [ local-part ] "@" ] domain-name ) [CFWS]`, where the
   * local part may be a quoted string. Unquoted values use the loose character set (see the
   * module note); an empty value is allowed.
   */
  pvalue(): string {
    this.cfws();
    if (this.peek() === '"') {
      const local = this.quoted();
      if (this.peek() !== '@') return local;
      this.i++;
      const domain = this.run(isLooseValueChar);
      if (!domain) throw new Malformed('expected a domain after "@"');
      return `${local}@${domain}`;
    }
    return this.run(isLooseValueChar);
  }
}

function parseResinfo(r: Reader, method: string): AuthResult {
  let methodVersion: number | null = null;
  if (r.peek() === '/') {
    r.i++;
    r.cfws();
    methodVersion = r.digits();
    r.cfws();
  }
  r.expect('=');
  r.cfws();
  const result = r.run((c) => RESULT_CHAR.test(c)).toLowerCase();
  if (!result) throw new Malformed('expected a result');
  let reason: string | null = null;
  const props: AuthProp[] = [];
  for (;;) {
    const spaced = r.cfws();
    if (r.done || r.peek() === ';') break;
    if (!spaced) throw new Malformed('expected whitespace before a property');
    const name = r.keyword('a property');
    r.cfws();
    if (r.peek() === '.') {
      r.i++;
      r.cfws();
      const property = r.keyword('a property name');
      r.cfws();
      r.expect('=');
      props.push({ ptype: name, property, value: r.pvalue() });
    } else if (r.peek() === '=') {
      r.i++;
      if (name === 'reason') {
        if (reason !== null) throw new Malformed('two reasons');
        r.cfws();
        reason = r.value();
      } else {
        props.push({ ptype: '', property: name, value: r.pvalue() });
      }
    } else {
      throw new Malformed('expected "." or "="');
    }
  }
  return { method, methodVersion, result, reason, props };
}

/**
 * Parses the value of one Authentication-Results field (the part after the colon; folding and
 * comments allowed anywhere CFWS is).
 *
 * @returns the authserv-id, the optional version and the results, or null when the value is not
 *   an Authentication-Results payload (e.g. Microsoft's form without an authserv-id). Never throws.
 */
export function parseAuthResults(value: string): ParsedAuthResults | null {
  try {
    const r = new Reader(String(value));
    r.cfws();
    const authservId = r.value();
    r.cfws();
    let version: number | null = null;
    if (DIGIT.test(r.peek())) {
      version = r.digits();
      r.cfws();
    }
    if (r.done) return null; // RFC 8601 requires `; none` or at least one result
    const results: AuthResult[] = [];
    let none = false;
    while (!r.done) {
      r.expect(';');
      r.cfws();
      if (r.done || r.peek() === ';') continue;
      const method = r.keyword('a method');
      r.cfws();
      if (method === 'none' && (r.done || r.peek() === ';')) {
        none = true;
        continue;
      }
      results.push(parseResinfo(r, method));
    }
    if (none && results.length > 0) return null; // `none` means "no results", never beside one
    return { authservId, version, results };
  } catch {
    return null;
  }
}

/** The first value of `ptype.property` in a result, or null. */
export function propValue(result: AuthResult, ptype: string, property: string): string | null {
  return result.props.find((p) => p.ptype === ptype && p.property === property)?.value ?? null;
}

/**
 * A separate, tolerant reading of Microsoft 365 / Outlook.com Authentication-Results, which carry
 * no authserv-id (`spf=pass (sender IP is 192.0.2.25) smtp.mailfrom=agent.example; dkim=pass
 * (signature was verified) header.d=agent.example;dmarc=pass action=none
 * header.from=agent.example;compauth=pass reason=100`; ohdearquant/khive#500). The results are
 * read with the same resinfo grammar as `parseAuthResults`; the differences are only that the
 * field starts with a result instead of an authserv-id, and that a slot holding a lone domain name
 * after the first result is skipped (older Microsoft fields wrote the receiving domain as one:
 * `smtp.mailfrom=a.example; outlook.com; dkim=…`, mailcow/mailcow-dockerized#1371). Such a slot
 * can never become a result. Only the Microsoft preset (border.ts, `idless`) calls this, and only
 * for the field its border hop wrote; `parseAuthResults` stays strict for every other provider.
 *
 * @returns the results with `authservId: ''`, or null when the value does not start with a
 *   result (an RFC 8601 field with an authserv-id included) or is off the grammar. Never throws.
 */
export function parseIdlessAuthResults(value: string): ParsedAuthResults | null {
  try {
    const r = new Reader(String(value));
    const results: AuthResult[] = [];
    r.cfws();
    for (let first = true; !r.done; first = false) {
      if (!first) {
        r.expect(';');
        r.cfws();
        if (r.done || r.peek() === ';') continue;
      }
      const start = r.i;
      const method = r.keyword('a method');
      r.cfws();
      if (r.peek() === '=' || r.peek() === '/') {
        results.push(parseResinfo(r, method));
        r.cfws();
        continue;
      }
      if (first) return null;
      r.i = start;
      const domain = r.run((c) => /[A-Za-z0-9.-]/.test(c));
      r.cfws();
      if (!domain.includes('.') || !(r.done || r.peek() === ';')) throw new Malformed('expected a result');
    }
    return results.length ? { authservId: '', version: null, results } : null;
  } catch {
    return null;
  }
}
