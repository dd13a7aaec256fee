/**
 * The provider corpus as the tests read it (written by test/fixtures/generate-provider-corpus.ts):
 * its manifest, its messages, the profile each preset builds, and the two ways a message is
 * judged: `intake` on a store holding the live task the replies answer (the attack corpus's), and
 * the real mailbox path.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { buildBridge } from '../../src/app.js';
import { loadConfig } from '../../src/config/config.js';
import { createLogger } from '../../src/log.js';
import { Store } from '../../src/store/store.js';
import { profileOf, type ProviderProfile } from '../../src/uplink/border.js';
import type { ProviderName } from '../../src/uplink/providers.js';
import type { Verdict } from '../../src/uplink/verdicts.js';
import type { ProviderCorpusManifest } from '../fixtures/generate-provider-corpus.js';
import { makeConfigDir, minimalToml } from './config-dir.js';
import { FIXTURES_DIR, loadManifest, loadZone, zoneResolver } from './corpus.js';
import type { DovecotHandle } from './dovecot.js';
import { corpusStore, type CorpusSetting } from './corpus-store.js';

export const PROVIDER_CORPUS_DIR = join(FIXTURES_DIR, 'providers');

export function loadProviderManifest(): ProviderCorpusManifest {
  return JSON.parse(readFileSync(join(PROVIDER_CORPUS_DIR, 'manifest.json'), 'utf8')) as ProviderCorpusManifest;
}

export function readProviderMessage(file: string): Buffer {
  return readFileSync(join(PROVIDER_CORPUS_DIR, file));
}

/** The profile `loadConfig` builds for `mailbox.provider = <name>` (self-hosted: with the manifest's patterns). */
export function providerProfile(m: ProviderCorpusManifest, name: ProviderName): ProviderProfile {
  if (name !== 'self-hosted') return profileOf(name);
  const anchored = (p: string): RegExp => new RegExp(`^(?:${p})$`, 'i');
  return profileOf(name, { authservId: anchored(m.selfHosted.authservId), borderHost: anchored(m.selfHosted.borderHost) });
}

/**
 * Takes one message in through `intake` (src/core/mail-check.ts), as a mailbox check does, on a
 * fresh store holding the live task (the attack corpus's, which the provider corpus answers).
 * @returns the ledger verdict and reason
 */
export async function judgeInStore(raw: Buffer, setting: CorpusSetting): Promise<{ verdict: Verdict; reason: string }> {
  const store = corpusStore(loadManifest(), setting);
  try {
    const out = await store.take(raw);
    if (out.kind !== 'recorded') throw new Error(`expected a recorded verdict, got ${out.kind}`);
    return { verdict: out.verdict, reason: out.reason };
  } finally {
    store.close();
  }
}

/**
 * Judges one message through the real mailbox path: put into a Dovecot folder (IMAP APPEND) or a
 * Maildir's new/, a fresh config (`[mailbox]` lines `providerLines`) and a store holding the live
 * task, `checkMailbox` once. @returns the ledger verdict and reason
 */
export async function judgeThroughMailbox(
  raw: Buffer,
  providerLines: string,
  o: { kind: 'imap' | 'maildir'; dovecot?: DovecotHandle; n: number; expectProvider?: ProviderName },
): Promise<{ verdict: string; reason: string }> {
  const manifest = loadProviderManifest();
  const { kind, n } = o;
  const dovecot = o.dovecot!;
  let mailboxToml: string;
  if (kind === 'imap') {
    const folder = `p${n}`;
    await dovecot.createFolder(folder);
    await dovecot.append(raw, { folder });
    mailboxToml = `kind = "imap"\nfolder = "${folder}"\n${providerLines}\n[mailbox.imap]\nhost = "127.0.0.1"\nport = ${dovecot.port}\ntls = false\nuser = "${dovecot.user}"\npassword_file = "imap-password"`;
  } else {
    mailboxToml = `kind = "maildir"\n${providerLines}\n[mailbox.maildir]\npath = "Maildir"`;
  }
  const toml = minimalToml().replace('kind = "maildir"\n', '').replace('[mailbox.maildir]\npath = "Maildir"', mailboxToml);
  const dir = makeConfigDir(toml);
  if (kind === 'imap') writeFileSync(join(dir.dir, 'imap-password'), `${dovecot.password}\n`, { mode: 0o600 });
  else {
    for (const sub of ['new', 'cur', 'tmp']) mkdirSync(join(dir.dir, 'Maildir', sub), { recursive: true });
    writeFileSync(join(dir.dir, 'Maildir', 'new', `1741078800.M1P1.test${n}`), raw);
  }
  const config = loadConfig(dir.configPath);
  if (o.expectProvider) expect(config.mailbox.provider).toBe(o.expectProvider);
  const db = Store.open(config.store.path);
  const dispatchedAt = Date.parse(manifest.dispatchedAt);
  db.tx((tx) => {
    tx.tasks.insert({ id: manifest.liveTaskId, agent: 'grok', contextId: 'ctx-1', state: 'WORKING', stateReason: null, failedBy: null, turn: 1, caller: null, createdAt: dispatchedAt, updatedAt: dispatchedAt, deadlineAt: dispatchedAt + 86_400_000 });
    tx.turns.insert({
      taskId: manifest.liveTaskId, turn: 1, ask: 'Compare the 2024 figures.', replyToken: manifest.liveToken, deadlineAt: dispatchedAt + 86_400_000,
      dispatchId: 'dispatch-1', envelope: Buffer.from('{}'), dispatchState: 'accepted', nextAttemptAt: null, acceptedAt: dispatchedAt,
      replyStatus: null, replyText: null, replyLedgerId: null, repliedAt: null, createdAt: dispatchedAt,
    });
  });
  db.close();
  // The bridge as serve builds it (the composition root), on the store just written.
  const built = buildBridge(config, { log: createLogger('silent'), now: () => Date.parse(manifest.judgedAt), dkimResolver: zoneResolver(loadZone().records) });
  try {
    const summary = await built.bridge.checkNow();
    expect(summary.ok, summary.error).toBe(true);
    const rows = built.bridge.ctx.store.ledger.query({ limit: 10 });
    expect(rows).toHaveLength(1);
    return { verdict: rows[0]!.verdict, reason: rows[0]!.reason };
  } finally {
    await built.close();
    rmSync(dir.dir, { recursive: true, force: true });
  }
}

