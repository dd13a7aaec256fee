/**
 * Issue 13 acceptance 1 on the real mailbox path: every message of the provider corpus
 * (test/fixtures/providers/) is put into a real mailbox — a Dovecot folder by IMAP APPEND, and a
 * Maildir's new/ — and read by `checkMailbox` with a config that says `mailbox.provider = <its
 * preset>` (loaded by `loadConfig`), against a store holding the live task. The ledger verdict
 * must be the manifest's: genuine replies promote, every forgery is refused.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openMailbox } from '../../../src/app.js';
import { loadConfig } from '../../../src/config/config.js';
import { checkMailbox } from '../../../src/core/mail-check.js';
import { createLogger } from '../../../src/log.js';
import { openDb } from '../../../src/store/db.js';
import { insertTask } from '../../../src/store/tasks.js';
import { insertTurn } from '../../../src/store/turns.js';
import { isApplied } from '../../../src/uplink/verdicts.js';
import { makeConfigDir, minimalToml } from '../../helpers/config-dir.js';
import { loadManifest, loadZone, zoneResolver } from '../../helpers/corpus.js';
import { startDovecot, type DovecotHandle } from '../../helpers/dovecot.js';
import { loadProviderManifest, readProviderMessage } from '../../helpers/provider-corpus.js';
import type { ProviderCorpusMessage } from '../../fixtures/generate-provider-corpus.js';

const manifest = loadProviderManifest();
/** Fastmail's genuine and forged mail come from the attack corpus (test/fixtures/corpus/), its own preset's corpus. */
const FASTMAIL_SLUGS = ['genuine-done', 'genuine-fastmail-full-layout', 'forged-ar-below-border-provider-says-fail', 'fake-provider-hops-below-border-via-relay', 'authserv-id-evilmessagingengine', 'helo-claims-provider-host', 'provider-wrote-no-ar-forged-one-below'];
const fastmail: ProviderCorpusMessage[] = loadManifest()
  .messages.filter((m) => FASTMAIL_SLUGS.some((slug) => m.file.endsWith(`-${slug}.eml`)))
  .map((m) => ({ file: `../corpus/${m.file}`, provider: 'fastmail', description: m.description, models: m.models, expect: m.expect, dkim: m.dkim }));
const messages = [...fastmail, ...manifest.messages];
const resolver = zoneResolver(loadZone().records);
const counts = new Map<string, number>();

/** The `[mailbox]` lines for the message's preset (self-hosted: the patterns `provider detect` prints for it). */
function providerToml(m: ProviderCorpusMessage): string {
  if (m.provider !== 'self-hosted') return `provider = "${m.provider}"`;
  return `provider = "self-hosted"\nauthserv_id = '${manifest.selfHosted.authservId}'\nborder_host = '${manifest.selfHosted.borderHost}'`;
}

/**
 * Judges one message through the mailbox: a fresh config dir and store holding the live task,
 * `checkMailbox` once. @returns the ledger verdict and reason
 */
async function judge(m: ProviderCorpusMessage, kind: 'imap' | 'maildir', dovecot: DovecotHandle, n: number): Promise<{ verdict: string; reason: string }> {
  const raw = readProviderMessage(m.file);
  let mailboxToml: string;
  if (kind === 'imap') {
    const folder = `p${n}`;
    await dovecot.createFolder(folder);
    await dovecot.append(raw, { folder });
    mailboxToml = `kind = "imap"\nfolder = "${folder}"\n${providerToml(m)}\n[mailbox.imap]\nhost = "127.0.0.1"\nport = ${dovecot.port}\ntls = false\nuser = "${dovecot.user}"\npassword_file = "imap-password"`;
  } else {
    mailboxToml = `kind = "maildir"\n${providerToml(m)}\n[mailbox.maildir]\npath = "Maildir"`;
  }
  const toml = minimalToml().replace('kind = "maildir"\n', '').replace('[mailbox.maildir]\npath = "Maildir"', mailboxToml);
  const dir = makeConfigDir(toml);
  if (kind === 'imap') writeFileSync(join(dir.dir, 'imap-password'), `${dovecot.password}\n`, { mode: 0o600 });
  else {
    for (const sub of ['new', 'cur', 'tmp']) mkdirSync(join(dir.dir, 'Maildir', sub), { recursive: true });
    writeFileSync(join(dir.dir, 'Maildir', 'new', `1741078800.M1P1.test${n}`), raw);
  }
  const config = loadConfig(dir.configPath);
  expect(config.mailbox.provider).toBe(m.provider);
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
    const summary = await checkMailbox({ config, db, mailbox, log: createLogger('silent'), now: () => Date.parse(manifest.judgedAt), random: Math.random, dkimResolver: resolver });
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

describe('provider corpus through the mailbox (issue 13)', () => {
  let dovecot: DovecotHandle;
  beforeAll(async () => {
    dovecot = await startDovecot();
  });
  afterAll(async () => {
    await dovecot?.stop();
    const lines = [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `  ${k.padEnd(48)} ${v}`);
    console.log(`provider corpus through Dovecot (IMAP APPEND) and Maildir, per kind/provider/verdict:\n${lines.join('\n')}`);
  });

  let n = 0;
  for (const kind of ['imap', 'maildir'] as const) {
    for (const m of messages) {
      it(`${kind}: ${m.file}`, async () => {
        n += 1;
        const out = await judge(m, kind, dovecot, n);
        const key = `${kind} ${m.provider} ${out.verdict}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
        expect(out.verdict, out.reason).toBe(m.expect.verdict);
        expect(isApplied(out.verdict as never)).toBe(isApplied(m.expect.verdict));
      });
    }
  }
});
