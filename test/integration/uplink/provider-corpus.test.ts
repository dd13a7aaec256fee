/**
 * On the real mailbox path: every message of the provider corpus
 * (test/fixtures/providers/) is put into a real mailbox — a Dovecot folder by IMAP APPEND, and a
 * Maildir's new/ — and read by `checkMailbox` with a config that says `mailbox.provider = <its
 * preset>` (loaded by `loadConfig`), against a store holding the live task. The ledger verdict
 * must be the manifest's: genuine replies promote, every forgery is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isApplied } from '../../../src/uplink/verdicts.js';
import { loadManifest } from '../../helpers/corpus.js';
import { startDovecot, type DovecotHandle } from '../../helpers/dovecot.js';
import { judgeThroughMailbox, loadProviderManifest, readProviderMessage } from '../../helpers/provider-corpus.js';
import type { ProviderCorpusMessage } from '../../fixtures/generate-provider-corpus.js';

const manifest = loadProviderManifest();
/** Fastmail's genuine and forged mail come from the attack corpus (test/fixtures/corpus/), its own preset's corpus. */
const FASTMAIL_SLUGS = ['genuine-done', 'genuine-fastmail-full-layout', 'forged-ar-below-border-provider-says-fail', 'fake-provider-hops-below-border-via-relay', 'authserv-id-evilmessagingengine', 'helo-claims-provider-host', 'provider-wrote-no-ar-forged-one-below'];
const fastmail: ProviderCorpusMessage[] = loadManifest()
  .messages.filter((m) => FASTMAIL_SLUGS.some((slug) => m.file.endsWith(`-${slug}.eml`)))
  .map((m) => ({ file: `../corpus/${m.file}`, provider: 'fastmail', description: m.description, models: m.models, expect: m.expect, dkim: m.dkim }));
const messages = [...fastmail, ...manifest.messages];
const counts = new Map<string, number>();

/** The `[mailbox]` lines for the message's preset (self-hosted: the patterns `provider detect` prints for it). */
function providerToml(m: ProviderCorpusMessage): string {
  if (m.provider !== 'self-hosted') return `provider = "${m.provider}"`;
  return `provider = "self-hosted"\nauthserv_id = '${manifest.selfHosted.authservId}'\nborder_host = '${manifest.selfHosted.borderHost}'`;
}

describe('provider corpus through the mailbox', () => {
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
        const out = await judgeThroughMailbox(readProviderMessage(m.file), providerToml(m), { kind, dovecot, n, expectProvider: m.provider });
        const key = `${kind} ${m.provider} ${out.verdict}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
        expect(out.verdict, out.reason).toBe(m.expect.verdict);
        expect(isApplied(out.verdict as never)).toBe(isApplied(m.expect.verdict));
      });
    }
  }
});
