/**
 * doctor's judgement of the latest agent mail on mail the bridge itself recorded (a real Maildir
 * check, src/core/intake.ts), not rows written by hand: mail refused at gate 5 keeps only its
 * header block in the ledger, so doctor reads it whole again from the mailbox
 * (src/uplink/message-by-source.ts) to verify its DKIM signature (attack review 10, F2: a genuine
 * Gmail reply under the wrong preset only warned); a forgery that became the latest tagged mail
 * does not hide the agent's reply before it (F3); a gate-3 refusal, which no setting changes, is a
 * warning (F4).
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildBridge } from '../../../src/app.js';
import { checkLatestTaggedMail } from '../../../src/cli/doctor-mail.js';
import { loadConfig, type Config } from '../../../src/config/config.js';
import { createLogger } from '../../../src/log.js';
import { Store } from '../../../src/store/store.js';
import { makeConfigDir, minimalToml } from '../../helpers/config-dir.js';
import { loadZone, zoneResolver } from '../../helpers/corpus.js';
import { readProviderMessage } from '../../helpers/provider-corpus.js';

const resolver = zoneResolver(loadZone().records);
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** The agent's genuine Gmail-stamped reply (corpus), signed by agent.example. */
const GENUINE = readProviderMessage('gmail/01-genuine-done.eml');

/** A Maildir config with the default preset (wrong for Gmail-stamped mail): its folder made. */
function maildirConfig(): Config {
  const c = makeConfigDir(minimalToml());
  dirs.push(c.dir);
  const config = loadConfig(c.configPath);
  for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(config.mailbox.maildirPath!, sub), { recursive: true });
  return config;
}

let delivered = 0;
/** Delivers `mail` into new/ and runs one mailbox check of the real bridge (its verdict to the ledger). */
async function deliverAndCheck(config: Config, mail: Buffer): Promise<string> {
  const name = `17410794${String(delivered++).padStart(2, '0')}.M1P1.host`;
  writeFileSync(join(config.mailbox.maildirPath!, 'new', name), mail);
  const built = buildBridge(config, { log: createLogger('silent'), dkimResolver: resolver });
  try {
    await built.bridge.checkNow();
  } finally {
    await built.close();
  }
  return name;
}

/** The ledger's newest tagged row: its verdict, size and how many bytes it kept. */
function latestRow(config: Config): { verdict: string; size: number; kept: number } {
  const store = Store.open(config.store.path, { readOnly: true });
  try {
    const row = store.ledger.latestTaggedWithRaw()!;
    return { verdict: row.verdict, size: row.size, kept: store.ledger.raw(row.id)!.length };
  } finally {
    store.close();
  }
}

/** `mail` with its DKIM-Signature and Authentication-Results fields taken out: anyone's mail naming the agent's task. */
function forgeryOf(mail: Buffer): Buffer {
  const field = (name: string): RegExp => new RegExp(`^${name}:[^\\r]*\\r\\n(?:[ \\t][^\\r]*\\r\\n)*`, 'gim');
  return Buffer.from(mail.toString('latin1').replace(field('DKIM-Signature'), '').replace(field('Authentication-Results'), ''), 'latin1');
}

describe("doctor reads a refused mail whole again when the ledger kept only its header block", () => {
  it('fails a genuine reply the wrong preset refuses, naming the preset (was: a warning, its signature unverifiable)', async () => {
    const config = maildirConfig();
    await deliverAndCheck(config, GENUINE);
    const row = latestRow(config);
    expect(row.verdict).toBe('auth:no-border');
    expect(row.kept).toBeLessThan(row.size);
    const c = await checkLatestTaggedMail(config, resolver);
    expect(c.status).toBe('fail');
    expect(c.fix).toContain('this mail is stamped like gmail: set in [mailbox] provider = "gmail"');
  });

  it('judges the header block as before when the mail is no longer in the mailbox', async () => {
    const config = maildirConfig();
    const name = await deliverAndCheck(config, GENUINE);
    rmSync(join(config.mailbox.maildirPath!, 'new', name));
    expect(readdirSync(join(config.mailbox.maildirPath!, 'new'))).toEqual([]);
    const c = await checkLatestTaggedMail(config, resolver);
    expect(c.status).toBe('warn');
    expect(c.detail).toContain('the ledger kept too few of its bytes');
  });

  it('does not take another file of the same size in its place: it must begin with the bytes the ledger kept', async () => {
    const config = maildirConfig();
    const name = await deliverAndCheck(config, GENUINE);
    // One byte of a field no signature covers (Delivered-To): its DKIM signature still verifies.
    const other = Buffer.from(GENUINE.toString('latin1').replace('Delivered-To: replies@', 'Delivered-To: replieZ@'), 'latin1');
    expect(other.equals(GENUINE)).toBe(false);
    expect(other.length).toBe(GENUINE.length);
    writeFileSync(join(config.mailbox.maildirPath!, 'new', name), other);
    const c = await checkLatestTaggedMail(config, resolver);
    expect(c.status).toBe('warn');
  });
});

describe('a forgery that became the latest tagged mail', () => {
  it("does not hide the agent's genuine reply before it, which the config refuses", async () => {
    const config = maildirConfig();
    await deliverAndCheck(config, GENUINE);
    await deliverAndCheck(config, forgeryOf(GENUINE));
    const c = await checkLatestTaggedMail(config, resolver);
    expect(c.status).toBe('fail');
    expect(c.detail).toContain("carries no sign that it is the agent's");
    expect(c.detail).toContain("but the agent's mail before it");
    expect(c.fix).toContain('provider = "gmail"');
  });

  it('stays a warning when no mail before it is the agent\'s', async () => {
    const config = maildirConfig();
    await deliverAndCheck(config, forgeryOf(GENUINE));
    await deliverAndCheck(config, forgeryOf(GENUINE).subarray(0)); // a copy: recorded as a duplicate, no new judgement
    const c = await checkLatestTaggedMail(config, resolver);
    expect(c.status).toBe('warn');
  });
});

describe('a mail gate 3 refuses (a field repeated), which no setting changes', () => {
  it('is a warning, even when it carries the agent\'s valid signature', async () => {
    const config = maildirConfig();
    const s = GENUINE.toString('latin1');
    const at = s.search(/^Date:/im);
    await deliverAndCheck(config, Buffer.from(`${s.slice(0, at)}Date: Mon, 1 Jan 2024 00:00:00 +0000\r\n${s.slice(at)}`, 'latin1'));
    expect(latestRow(config).verdict).toBe('auth:duplicate-header');
    const c = await checkLatestTaggedMail(config, resolver);
    expect(c.status).toBe('warn');
    expect(c.fix).toContain('no setting changes this verdict');
  });
});
