/**
 * The attack-mail corpus as the tests read it: the manifest and zone written by
 * `test/fixtures/generate-corpus.ts`, a DNS resolver serving the static zone, the one agent the
 * corpus is addressed to. Type imports only: the generator uses this file too, and must not
 * depend on the code under test.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AgentConfig } from '../../src/config/config.js';
import type { ProviderProfile } from '../../src/uplink/border.js';
import type { DnsResolver } from '../../src/uplink/dkim.js';
import type { Verdict } from '../../src/uplink/verdicts.js';
import type { FailedBy, TaskState } from '../../src/store/task-state.js';

export const FIXTURES_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures');
export const CORPUS_DIR = join(FIXTURES_DIR, 'corpus');

/** One task of the store model; the corpus has one live task and one completed one. */
export interface CorpusTask {
  id: string;
  /** The agent (by name) the task belongs to. */
  agent: string;
  state: TaskState;
  failedBy: FailedBy | null;
  /** The live reply token, or null once used or revoked. */
  token: string | null;
  /** Message-IDs already applied (or kept late) for this task. */
  appliedMessageIds: string[];
  /** When the current turn was dispatched (ISO-8601): the start of the Date window. */
  dispatchedAt: string;
}

export interface CorpusMessage {
  /** `<nn>-<slug>.eml`, relative to the corpus folder. */
  file: string;
  description: string;
  /** The public bug or attack this message models. */
  models: string;
  expect: { verdict: Verdict; reason?: string };
  /** Fields of the live task that differ for this message (e.g. a deadline failure). */
  task?: Partial<Omit<CorpusTask, 'id' | 'agent'>>;
  /** Files run through the stack first, in order, against the same store model (a sequence). */
  precededBy?: string[];
  /** Substrings the parsed answer must contain (a long reply comes through whole). */
  answerIncludes?: string[];
  /** Local DKIM verification of the final bytes as the generator saw it: `<d>=<result>`, in field order. */
  dkim: string[];
}

export interface CorpusManifest {
  generator: string;
  agent: { name: string; tag: string; address: string; dkimDomain: string; untrustedLabel: string };
  mailbox: string;
  /** Anchored, case-insensitive patterns, as the config builds them. */
  profile: { authservId: string; borderHost: string };
  liveTaskId: string;
  /** When the corpus is judged (ISO-8601): the end of the Date window. */
  judgedAt: string;
  /** `mailbox.date_skew_s` in ms (the config default). */
  dateSkewMs: number;
  tasks: CorpusTask[];
  messages: CorpusMessage[];
}

/** A TXT record of the static zone; the shape `startDnsZone` serves, so integration tests can reuse it. */
export interface ZoneRecordJson {
  name: string;
  type: 'TXT';
  data: string;
  note?: string;
}

export interface ZoneFile {
  description: string;
  records: ZoneRecordJson[];
}

export function loadManifest(): CorpusManifest {
  return JSON.parse(readFileSync(join(CORPUS_DIR, 'manifest.json'), 'utf8')) as CorpusManifest;
}

export function loadZone(): ZoneFile {
  return JSON.parse(readFileSync(join(CORPUS_DIR, 'zone.json'), 'utf8')) as ZoneFile;
}

export function readMessage(file: string): Buffer {
  return readFileSync(join(CORPUS_DIR, file));
}

function dnsError(code: 'ENOTFOUND' | 'ENODATA', name: string): Error {
  return Object.assign(new Error(`queryTxt ${code} ${name}`), { code });
}

/**
 * A resolver as mailauth calls it, serving the static zone: names compared case-insensitively and
 * without a trailing dot (DNS semantics), TXT values as arrays of ≤255-byte chunks; a name with
 * no record is ENOTFOUND, another type at a known name ENODATA.
 */
export function zoneResolver(records: readonly ZoneRecordJson[]): DnsResolver {
  const byName = new Map<string, string[]>();
  for (const r of records) {
    const key = r.name.toLowerCase().replace(/\.$/, '');
    byName.set(key, [...(byName.get(key) ?? []), r.data]);
  }
  return (name, rrtype) => {
    const key = String(name).toLowerCase().replace(/\.$/, '');
    const values = byName.get(key);
    if (!values) return Promise.reject(dnsError('ENOTFOUND', name));
    if (rrtype !== 'TXT') return Promise.reject(dnsError('ENODATA', name));
    return Promise.resolve(
      values.map((v) => {
        const chunks: string[] = [];
        for (let i = 0; i < v.length; i += 255) chunks.push(v.slice(i, i + 255));
        return chunks;
      }),
    );
  };
}

export function profileOf(m: CorpusManifest): ProviderProfile {
  const anchored = (p: string): RegExp => new RegExp(`^(?:${p})$`, 'i');
  return { authservId: anchored(m.profile.authservId), borderHost: anchored(m.profile.borderHost) };
}

/** The corpus agent as `loadConfig` would build it (the webhook is never used by the gates). */
export function corpusAgent(m: CorpusManifest): AgentConfig {
  return {
    name: m.agent.name,
    description: 'The corpus agent (test only).',
    tag: m.agent.tag,
    address: m.agent.address,
    dkimDomain: m.agent.dkimDomain,
    deadlineMs: 3_600_000,
    maxOpenTasks: 20,
    untrustedLabel: m.agent.untrustedLabel,
    skills: [],
    webhook: {
      url: new URL('https://hooks.agent.example/grok'),
      auth: 'bearer',
      bearer: 'test-only',
      timeoutMs: 10_000,
      maxAttempts: 3,
      maxAgeMs: 3_600_000,
      notifyCancel: false,
      maxPerMinute: 10,
    },
  };
}
