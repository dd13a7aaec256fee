/**
 * The provider corpus of issue 13 as the tests read it (written by
 * test/fixtures/generate-provider-corpus.ts): its manifest, its messages, the profile each
 * preset builds, and a store model holding the live task the replies answer.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { openMailbox } from '../../src/app.js';
import { loadConfig } from '../../src/config/config.js';
import { checkMailbox } from '../../src/core/mail-check.js';
import { createLogger } from '../../src/log.js';
import { openDb } from '../../src/store/db.js';
import { insertTask } from '../../src/store/tasks.js';
import { insertTurn } from '../../src/store/turns.js';
import { profileOf, type ProviderProfile } from '../../src/uplink/border.js';
import type { ProviderName } from '../../src/uplink/providers.js';
import type { ProviderCorpusManifest } from '../fixtures/generate-provider-corpus.js';
import { makeConfigDir, minimalToml } from './config-dir.js';
import { FIXTURES_DIR, loadManifest, loadZone, zoneResolver } from './corpus.js';
import type { DovecotHandle } from './dovecot.js';
import { storeModel, type StoreModel } from './gate-stack.js';

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

/** A fresh store model with the live task (the attack corpus's, which the provider corpus answers). */
export function providerStore(): StoreModel {
  return storeModel(loadManifest());
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
  const db = openDb(config.store.path);
  const dispatchedAt = Date.parse(manifest.dispatchedAt);
  insertTask(db, { id: manifest.liveTaskId, agent: 'grok', contextId: 'ctx-1', state: 'WORKING', stateReason: null, failedBy: null, turn: 1, caller: null, createdAt: dispatchedAt, updatedAt: dispatchedAt, deadlineAt: dispatchedAt + 86_400_000 });
  insertTurn(db, {
    taskId: manifest.liveTaskId, turn: 1, ask: 'Compare the 2024 figures.', replyToken: manifest.liveToken, deadlineAt: dispatchedAt + 86_400_000,
    dispatchId: 'dispatch-1', envelope: Buffer.from('{}'), dispatchState: 'accepted', nextAttemptAt: null, acceptedAt: dispatchedAt,
    replyStatus: null, replyText: null, replyLedgerId: null, repliedAt: null, createdAt: dispatchedAt,
  });
  const mailbox = openMailbox(config);
  try {
    const summary = await checkMailbox({ config, db, mailbox, log: createLogger('silent'), now: () => Date.parse(manifest.judgedAt), random: Math.random, dkimResolver: zoneResolver(loadZone().records) });
    expect(summary.ok, summary.error).toBe(true);
    const rows = db.prepare('SELECT verdict, reason FROM ledger').all() as { verdict: string; reason: string }[];
    expect(rows).toHaveLength(1);
    return rows[0]!;
  } finally {
    await mailbox.close();
    db.close();
    rmSync(dir.dir, { recursive: true, force: true });
  }
}

