/**
 * A message as header fields with roles (border, trusted A-R, signature, signed, sensitive,
 * provider, sender), computed here independently of the code under test, for the message judge's
 * property tests (test/unit/uplink/gates.property.test.ts): a corpus reply loaded as a base, and
 * serialized back to bytes.
 */
import type { Verdict } from '../../src/uplink/verdicts.js';
import { type CorpusManifest, readMessage } from './corpus.js';

type Role = 'border' | 'trusted-ar' | 'signature' | 'signed' | 'sensitive' | 'provider' | 'sender';

export interface Field {
  text: string;
  /** Lower-cased name of the field as the base had it. */
  name: string;
  role: Role;
}

export interface Msg {
  fields: Field[];
  body: Buffer;
}

export interface Base {
  file: string;
  expected: Verdict;
  msg: Msg;
  flowed: boolean;
  singlePart: boolean;
  authservId: string;
  headerD: string;
  headerB: string;
}

export const SENSITIVE = new Set(['from', 'subject', 'date', 'message-id']);

function splitFields(header: string): string[] {
  const out: string[] = [];
  for (const line of header.split('\r\n')) {
    if (/^[ \t]/.test(line) && out.length) out[out.length - 1] += `\r\n${line}`;
    else out.push(line);
  }
  return out;
}

function nameOf(text: string): string {
  return text.slice(0, text.indexOf(':')).trim().toLowerCase();
}

export function unfold(text: string): string {
  return text.replace(/\r\n(?=[ \t])/g, '');
}

export function loadBase(manifest: CorpusManifest, file: string): Base {
  const raw = readMessage(file);
  const end = raw.indexOf('\r\n\r\n');
  const texts = splitFields(raw.subarray(0, end).toString('utf8'));
  const body = raw.subarray(end + 4);
  // The border: the provider's Received from the agent's MTA or the relay (the generator's peers).
  const border = texts.findIndex((t) => /^Received: from \S+ \(\S+ \[(?:192\.0\.2\.25|198\.51\.100\.7)\]\)/.test(t));
  // The agent's signature (a base may also carry the relay's own, which authenticity does not rest on).
  const isAgentSignature = (t: string): boolean => /^DKIM-Signature:/i.test(t) && /[;\s]d=agent\.example\.?;/i.test(unfold(t));
  const sigText = texts.find(isAgentSignature) ?? '';
  const h = new Set(
    (/\bh=([^;]*)/.exec(unfold(sigText))?.[1] ?? '')
      .split(':')
      .map((s) => s.trim().toLowerCase())
      .filter(Boolean),
  );
  const ar = texts.find((t, i) => i < border && /^Authentication-Results:/i.test(t) && /dkim=pass/.test(t)) ?? '';
  const fields = texts.map((text, i): Field => {
    const name = nameOf(text);
    let role: Role = i < border ? 'provider' : 'sender';
    if (i === border) role = 'border';
    else if (text === ar) role = 'trusted-ar';
    else if (isAgentSignature(text)) role = 'signature';
    else if (SENSITIVE.has(name)) role = 'sensitive';
    else if (h.has(name) && i > border) role = 'signed';
    return { text, name, role };
  });
  if (border < 0 || !ar || !sigText) throw new Error(`${file}: not a stamped, signed base`);
  const contentType = unfold(texts.find((t) => /^Content-Type:/i.test(t)) ?? '');
  const m = manifest.messages.find((x) => x.file === file);
  return {
    file,
    expected: m!.expect.verdict,
    msg: { fields, body },
    flowed: /format=flowed/i.test(contentType),
    singlePart: !/multipart/i.test(contentType),
    authservId: /^Authentication-Results:\s*([^;\s]+)/.exec(ar)?.[1] ?? '',
    headerD: /header\.d=(\S+)/.exec(unfold(ar))?.[1] ?? '',
    headerB: /header\.b=(\S+)/.exec(unfold(ar))?.[1] ?? '',
  };
}

export function serialize(m: Msg): Buffer {
  return Buffer.concat([Buffer.from(`${m.fields.map((f) => f.text).join('\r\n')}\r\n\r\n`, 'utf8'), m.body]);
}

export const borderIndex = (m: Msg): number => m.fields.findIndex((f) => f.role === 'border');
