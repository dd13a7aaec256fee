/**
 * The `from` and `by` clauses of a Received field (RFC 5321 §4.4 Stamp, RFC 5322 §3.6.7) and the
 * internal-address test the border rule (border.ts) reads them with.
 */
import { isIPv4, isIPv6 } from 'node:net';

/** The parts of a Received field the border rule reads. */
export interface ReceivedHop {
  /** The host after `from`, lower-cased, trailing dot removed (often the sender's HELO name). */
  from: string | null;
  /** The host after `by`, lower-cased, trailing dot removed. */
  by: string | null;
  /** Every IP address written in the `from` clause: the host itself when it is a literal, and its comments. */
  fromIps: string[];
}

interface Word {
  text: string;
  comments: string[];
}

/** Splits a Received value into words (comments attached to the word before them), up to the `;` before the date. */
function receivedWords(value: string): Word[] {
  const words: Word[] = [];
  let i = 0;
  const s = value;
  while (i < s.length) {
    const c = s[i] ?? '';
    if (c === ';') break;
    if (c === ' ' || c === '\t' || c === '\r' || c === '\n') {
      i++;
    } else if (c === '(') {
      let depth = 0;
      const from = i;
      while (i < s.length) {
        const d = s[i++];
        if (d === '\\') i++;
        else if (d === '(') depth++;
        else if (d === ')' && --depth === 0) break;
      }
      const text = s.slice(from + 1, depth === 0 ? i - 1 : i);
      words[words.length - 1]?.comments.push(text);
    } else {
      const from = i;
      let quoted = false;
      while (i < s.length) {
        const d = s[i] ?? '';
        if (quoted) {
          if (d === '\\') i++;
          else if (d === '"') quoted = false;
        } else if (d === '"') quoted = true;
        else if (d === ' ' || d === '\t' || d === '\r' || d === '\n' || d === '(' || d === ';') break;
        i++;
      }
      words.push({ text: s.slice(from, i), comments: [] });
    }
  }
  return words;
}

function hostOf(word: Word | undefined): string | null {
  if (!word) return null;
  const h = word.text.toLowerCase().replace(/\.$/, '');
  return h === '' || h === 'from' || h === 'by' ? null : h;
}

/** IP addresses in a piece of Received text: `[1.2.3.4]`, `[IPv6:…]`, or a bare address word. */
function ipsIn(text: string): string[] {
  const out: string[] = [];
  // A bracket's content stops at the next `[` too, so each attempt ends where the next one starts:
  // a run of `[` without `]` is linear (it was quadratic).
  for (const m of text.matchAll(/\[(?:ipv6:)?([^[\]\s]+)\]/gi)) {
    if (m[1] && (isIPv4(m[1]) || isIPv6(m[1]))) out.push(m[1].toLowerCase());
  }
  for (const w of text.split(/[\s,;=()]+/)) {
    const bare = w.replace(/\.$/, '');
    if (isIPv4(bare) || isIPv6(bare)) out.push(bare.toLowerCase());
  }
  return out;
}

/**
 * Reads the `from` and `by` clauses of a Received value (RFC 5321 §4.4 Stamp, RFC 5322 §3.6.7).
 * Comments are skipped for the host names but searched for the peer's IP in the `from` clause
 * (`from helo.example (rdns.example [192.0.2.1])`). Never throws.
 */
export function parseReceived(value: string): ReceivedHop {
  try {
    const words = receivedWords(String(value));
    const fromAt = words.findIndex((w) => w.text.toLowerCase() === 'from');
    const byAt = words.findIndex((w, i) => (fromAt < 0 || i !== fromAt + 1) && w.text.toLowerCase() === 'by');
    const fromWord = fromAt >= 0 && (byAt < 0 || fromAt < byAt) ? words[fromAt + 1] : undefined;
    const from = hostOf(fromWord);
    const fromIps = fromWord && from !== null ? [...ipsIn(fromWord.text), ...fromWord.comments.flatMap(ipsIn)] : [];
    return { from, by: byAt >= 0 ? hostOf(words[byAt + 1]) : null, fromIps: [...new Set(fromIps)] };
  } catch {
    return { from: null, by: null, fromIps: [] };
  }
}

/**
 * Addresses that never reach a public MX from the Internet: loopback, RFC 1918, link-local,
 * shared (RFC 6598), IPv6 ULA (RFC 4193) and link-local, and their IPv4-mapped forms.
 */
export function isInternalIp(ip: string): boolean {
  let v4 = isIPv4(ip) ? ip : null;
  if (!v4 && isIPv6(ip)) {
    const lower = ip.toLowerCase();
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower)?.[1];
    if (mapped) v4 = mapped;
    else return lower === '::1' || /^f[cd][0-9a-f]{0,2}:/.test(lower) || /^fe[89ab][0-9a-f]?:/.test(lower);
  }
  if (!v4) return false;
  const [a = -1, b = -1] = v4.split('.').map(Number);
  return a === 127 || a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 169 && b === 254) || (a === 100 && b >= 64 && b <= 127);
}

