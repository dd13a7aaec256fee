/**
 * doctor's judgement of the agent's latest tagged mail: with the wrong provider preset
 * it fails and names the preset the mail is stamped like; with the right one it passes gates 3–7;
 * a mail no config can make pass — no Received field (written into the folder by hand), or only
 * loopback senders — is a warning that says the config is not the cause, unless it carries a stamp
 * the config would trust, or the latest accepted reply fails now; a stamp the config trusts in a
 * mail that holds no DKIM-Signature the stamp says passed fails (attack review 6, F5). Any other
 * refused mail fails only when it carries a sign of being the agent's its sender cannot make (a
 * trusted pass for the agent's domain, a DKIM signature of it that verifies): a forgery anyone can
 * send to the mailbox is a warning (fresh-user trial).
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { checkLatestTaggedMail } from '../../../src/cli/doctor-mail.js';
import { loadConfig } from '../../../src/config/config.js';
import { Store } from '../../../src/store/store.js';
import type { Verdict } from '../../../src/uplink/verdicts.js';
import { makeConfigDir, minimalToml } from '../../helpers/config-dir.js';
import { loadZone, readMessage, zoneResolver } from '../../helpers/corpus.js';
import { readProviderMessage } from '../../helpers/provider-corpus.js';

const resolver = zoneResolver(loadZone().records);

function configWith(providerLine: string | null, raw: Buffer | null, size = raw?.length ?? 0, agentLines = 'address = "agent@agent.example"') {
  const toml = minimalToml().replace('kind = "maildir"\n', `kind = "maildir"\n${providerLine ?? ''}\n`).replace('address = "agent@agent.example"', agentLines);
  const config = loadConfig(makeConfigDir(toml).configPath);
  if (raw) record(config.store.path, raw, 'auth:no-border', size);
  return config;
}

/** A ledger row of tagged mail for the agent, with its raw bytes (`size` of them fetched) and a verdict. */
function record(storePath: string, raw: Buffer, verdict: Verdict, size = raw.length): void {
  const db = Store.open(storePath);
  db.tx((tx) => tx.ledger.record({
    source: `maildir:x:${createHash('sha256').update(raw).digest('hex').slice(0, 8)}`, seenAt: Date.parse('2025-03-04T10:00:00Z'), messageId: null, fromHeader: null, subject: null, dateHeader: null,
    size, rawSha256: createHash('sha256').update(raw).digest('hex'), raw, agent: 'grok', taskId: '3f6b1c2e-8d4a-4b7e-9a15-c2d3e4f5a6b7',
    verdict, reason: 'gate 5', receivedAt: Date.parse('2025-03-04T09:10:00Z'),
  }));
  db.close();
}

describe('doctor: latest agent mail', () => {
  const gmail = readProviderMessage('gmail/01-genuine-done.eml');
  /** The agent's reply with every Received field taken out: as a file written into the folder by hand. */
  const handWritten = Buffer.from(gmail.toString('latin1').replace(/^Received:[^\r]*\r\n(?:[ \t][^\r]*\r\n)*/gim, ''), 'latin1');
  /** The same file with the provider's stamp taken out too: nothing in it looks like a stamp the config trusts. */
  const unstamped = Buffer.from(handWritten.toString('latin1').replace(/^Authentication-Results:[^\r]*\r\n(?:[ \t][^\r]*\r\n)*/gim, ''), 'latin1');
  /** Mail sent on this machine: a local MTA on the loopback adds the only Received field. */
  const viaLoopback = (mail: Buffer): Buffer => Buffer.concat([Buffer.from('Received: from localhost (localhost [127.0.0.1])\r\n\tby host.local (Postfix) with ESMTP id 4XyZ; Tue, 04 Mar 2025 09:01:02 +0000\r\n', 'latin1'), mail]);

  it('fails with the wrong preset and names the one the mail is stamped like', async () => {
    const c = await checkLatestTaggedMail(configWith(null, gmail), resolver);
    expect(c.status).toBe('fail');
    expect(c.detail).toMatch(/ledger #1 \(auth:no-border\) would be refused: gate 5: no Received by a host matching/);
    expect(c.fix).toMatch(/stamped like gmail: set in \[mailbox\] provider = "gmail"/);
  });

  it('warns, not fails, on a mail in which no config can find a border and no stamp the config trusts: no Received field (a file put into the folder by hand), or only loopback senders', async () => {
    // README, [mailbox]: a mail written into the Maildir's tmp/ and moved into new/ by hand.
    const c = await checkLatestTaggedMail(configWith('provider = "gmail"', unstamped), resolver);
    expect(c.status).toBe('warn');
    expect(c.detail).toBe('ledger #1 (auth:no-border) would be refused: gate 5: no Received field: cannot tell where the provider accepted the message; it never passed a mail server: it has no Received field, which every server that takes mail in adds (a file written into the folder by hand or by a local program)');
    // The command that works wherever the CLI is installed (npm run demo works only inside the checkout).
    expect(c.fix).toMatch(/^nothing in the config needs changing: .*run a2a-mailbridge demo \(the whole round trip\), or wait for a genuine reply from the agent$/);
    // Gmail's stamp copied in, under the default preset: not a stamp this config trusts, so the config is not what refuses it.
    expect(await checkLatestTaggedMail(configWith(null, handWritten), resolver)).toMatchObject({ status: 'warn', fix: c.fix });
    // Mail sent on this machine (a local MTA on the loopback): no hop came from outside.
    const l = await checkLatestTaggedMail(configWith('provider = "gmail"', viaLoopback(unstamped)), resolver);
    expect(l).toMatchObject({ status: 'warn', fix: c.fix });
    expect(l.detail).toMatch(/; it never came in from outside: each of its Received fields names a loopback or private sender address \(mail sent on this machine or its network\)$/);
    // One hop from a public address: whether it is the border depends on the config, which stays the suspect.
    const relayed = Buffer.from(viaLoopback(handWritten).toString('latin1').replace('from localhost (localhost [127.0.0.1])', 'from mail.agent.example (mail.agent.example [192.0.2.25])'), 'latin1');
    expect(await checkLatestTaggedMail(configWith('provider = "gmail"', relayed), resolver)).toMatchObject({ status: 'fail', fix: expect.stringMatching(/provider detect/) as unknown });
  });

  it('fails, not warns, on a mail no config can find a border in that carries a stamp the config would trust (hand-made, or submitted over loopback)', async () => {
    for (const mail of [handWritten, viaLoopback(handWritten)]) {
      const c = await checkLatestTaggedMail(configWith('provider = "gmail"', mail), resolver);
      expect(c.status).toBe('fail');
      expect(c.detail).toMatch(/; yet it carries Authentication-Results #\d+ that the config would trust at a border: the config trusts a stamp a hand-made or forged mail can carry \(provider gmail\)/);
      expect(c.fix).toMatch(/^check that \[mailbox\] provider, authserv_id and border_host trust only .*provider detect --from agent@agent\.example on a genuine reply/);
      expect(c.fix).not.toMatch(/nothing in the config needs changing/);
      expect(c.fix).toMatch(/; if you wrote this mail into the folder yourself with a copied stamp, a2a-mailbridge demo is the real test$/);
    }
  });

  it("fails on a mail under a stamp the config trusted, of a DKIM pass, that holds no DKIM-Signature, even when the latest accepted reply passes", async () => {
    const unsigned = Buffer.from(gmail.toString('latin1').replace(/^DKIM-Signature:[^\r]*\r\n(?:[ \t][^\r]*\r\n)*/gim, ''), 'latin1');
    expect(unsigned.toString('latin1')).not.toMatch(/^DKIM-Signature:/im);
    const c = await checkLatestTaggedMail(configWith('provider = "gmail"', unsigned), resolver);
    expect(c.status).toBe('fail');
    expect(c.detail).toMatch(/would be refused: gate 7: .*the message holds no DKIM-Signature with d=agent\.example\); the config trusted its stamp \(border is Received #\d+ .*trusted Authentication-Results #\d+ \(mx\.google\.com\)\), which says a DKIM signature passed, but it holds no DKIM-Signature at all: no provider wrote that stamp on this mail, and the config trusts a stamp a hand-made or forged mail can carry/);
    expect(c.fix).toMatch(/provider detect --from agent@agent\.example on a genuine reply/);
    // The agent's genuine reply passing does not clear a config that trusted a stamp no provider wrote on this mail.
    const config = configWith('provider = "gmail"', null);
    record(config.store.path, gmail, 'applied:done');
    record(config.store.path, unsigned, 'auth:dkim-unaligned');
    expect(await checkLatestTaggedMail(config, resolver)).toMatchObject({ status: 'fail', detail: expect.stringMatching(/^ledger #2 .*no provider wrote that stamp on this mail/) as unknown });
  });

  it('does not say the config needs no change while the latest accepted reply would be refused with it', async () => {
    // The agent's reply was accepted under the gmail preset; the config now names the default one.
    const config = configWith(null, null);
    record(config.store.path, gmail, 'applied:done');
    record(config.store.path, unstamped, 'auth:no-border');
    const c = await checkLatestTaggedMail(config, resolver);
    expect(c.status).toBe('fail');
    expect(c.detail).toMatch(/^ledger #2 \(auth:no-border\) would be refused: .*; but the latest reply accepted, ledger #1 \(applied:done\) would be refused: gate 5: /);
    expect(c.fix).toMatch(/stamped like gmail/);
    // With a config under which it passes, the warning stands.
    const right = configWith('provider = "gmail"', null);
    record(right.store.path, gmail, 'applied:done');
    record(right.store.path, unstamped, 'auth:no-border');
    expect(await checkLatestTaggedMail(right, resolver)).toMatchObject({ status: 'warn', fix: expect.stringMatching(/^nothing in the config needs changing/) as unknown });
  });

  it('passes with the right preset', async () => {
    const config = configWith('provider = "gmail"', gmail);
    // The ledger keeps this mail compressed (src/store/ledger.ts): doctor judges the bytes as fetched.
    const s = Store.open(config.store.path, { readOnly: true });
    expect(s.ledger.raw(1)?.equals(gmail)).toBe(true);
    s.close();
    const c = await checkLatestTaggedMail(config, resolver);
    expect(c).toMatchObject({ status: 'ok', detail: 'ledger #1 (auth:no-border) passes gates 3–7 with provider gmail' });
  });

  it('judges a mail of which the ledger kept only the header block on that block (gates 3–7 without local verification)', async () => {
    const head = gmail.subarray(0, gmail.indexOf('\r\n\r\n') + 4);
    const ok = await checkLatestTaggedMail(configWith('provider = "gmail"', head, gmail.length), resolver);
    expect(ok).toMatchObject({ status: 'ok', detail: expect.stringMatching(/^ledger #1 \(auth:no-border\) passes gates 3–7 on its header block with provider gmail \(the ledger kept \d+ of its \d+ bytes/) as unknown });
    // Under the wrong preset the config trusts no stamp in it, and its DKIM signature cannot be
    // verified from the header block: a forgery padded past what the ledger keeps looks the same,
    // so it is a warning, whose fix names provider detect for the case it is the agent's.
    const wrong = await checkLatestTaggedMail(configWith(null, head, gmail.length), resolver);
    expect(wrong).toMatchObject({ status: 'warn', detail: expect.stringMatching(/carries no sign that it is the agent's \(.*: the ledger kept too few of its bytes to verify its DKIM-Signature of agent\.example\)/) as unknown });
    expect(wrong.fix).toMatch(/^nothing to change if it is not the agent's: .*If it is the agent's reply, the config may be what refuses it: .*provider detect --from agent@agent\.example shows what your provider stamps on it$/);
  });

  it('prints the self-hosted patterns when the mail comes from your own MTA', async () => {
    const c = await checkLatestTaggedMail(configWith('provider = "icloud"', readProviderMessage('self-hosted/01-genuine-done.eml')), resolver);
    expect(c.fix).toContain(`provider = "self-hosted", authserv_id = 'mail\\.person\\.example', border_host = 'mail\\.person\\.example'`);
  });

  it("names the agent's key and its value when the stamp was read and gate 4 or 7 refuses", async () => {
    const otherDomain = await checkLatestTaggedMail(configWith('provider = "gmail"', gmail, gmail.length, 'address = "agent@agent.example"\ndkim_domain = "other.example"'), resolver);
    expect(otherDomain).toMatchObject({ status: 'fail', detail: expect.stringContaining('would be refused: gate 7') as unknown });
    expect(otherDomain.fix).toBe("the provider's stamp was read; the refusal is about the mail itself (auth:dkim-unaligned): check agents[0].dkim_domain (other.example) and the agent's DKIM signing");
    // A config whose address is another's: the mail is the agent's by its tag, and From is not that address.
    const otherAddress = await checkLatestTaggedMail(configWith('provider = "gmail"', gmail, gmail.length, 'address = "bot@agent.example"'), resolver);
    // Or a stranger's mail naming the task: doctor cannot tell, so it warns with both readings (fresh-user trial).
    expect(otherAddress.status).toBe('warn');
    expect(otherAddress.fix).toBe("if that mail was the agent's reply, set agents[0].address (bot@agent.example) to the From the agent sends with; if it was not, it is someone else's mail, refused as it should be, and nothing needs to change");
  });

  it('skips a mail whose header block cannot be read as one: its row names the task, but no provider setting changes its verdict', async () => {
    const end = gmail.indexOf('\r\n\r\n');
    const huge = Buffer.concat([gmail.subarray(0, end), Buffer.from(`\r\nX-Pad: ${'a'.repeat(300 * 1024)}`), gmail.subarray(end)]);
    const c = await checkLatestTaggedMail(configWith('provider = "gmail"', huge.subarray(0, 64 * 1024), huge.length), resolver);
    expect(c).toMatchObject({ status: 'skip', detail: expect.stringMatching(/^ledger #1 \(auth:no-border\): no empty line ends the header block within its first 256 KiB/) as unknown });
  });

  it('is ok while there is no store or no tagged mail', async () => {
    expect((await checkLatestTaggedMail(configWith(null, null), resolver)).status).toBe('ok');
  });

  it('warns, not fails, when the latest mail would be refused but the latest accepted reply passes with the config', async () => {
    // The agent's genuine reply was applied; then mail naming the agent and its task came in
    // through another server than the provider's MX: the config is not what refuses it.
    const otherWay = Buffer.from(gmail.toString('latin1').replace('by mx.google.com', 'by mx.elsewhere.example'), 'latin1');
    const config = configWith('provider = "gmail"', null);
    record(config.store.path, gmail, 'applied:done');
    record(config.store.path, otherWay, 'auth:no-border');
    const c = await checkLatestTaggedMail(config, resolver);
    expect(c.status).toBe('warn');
    expect(c.detail).toMatch(/^ledger #2 \(auth:no-border\) would be refused: gate 5: no Received by a host matching .*; ledger #1 \(applied:done\), the latest reply accepted, passes with this config$/);
    expect(c.fix).toMatch(/^the config is not the cause/);
    // With a config under which the accepted reply would fail too, the config is the suspect: fail.
    const wrong = configWith(null, null);
    record(wrong.store.path, gmail, 'applied:done');
    record(wrong.store.path, otherWay, 'auth:no-border');
    expect((await checkLatestTaggedMail(wrong, resolver)).status).toBe('fail');
  });

  describe('a refused mail that carries no sign of being the agent\'s (fresh-user trial)', () => {
    /** The corpus's provider (Fastmail: the default preset) and agent. */
    const fastmail = (mail: Buffer) => configWith(null, mail);
    const SIGNLESS = /^ledger #1 \(auth:no-border\): a mail tagged as agent grok's reply was refused, and it carries no sign that it is the agent's \(no dkim=pass for agent\.example or dmarc=pass for agent\.example in the Authentication-Results the config trusts, and no DKIM-Signature of agent\.example that verifies\); the refusal, quoting the mail's headers: "gate \d/;

    it('warns, not fails, on forgeries anyone can send to the mailbox, and does not point at provider detect', async () => {
      for (const [mail, gate] of [
        // A real border, no stamp by the provider, and a perfect forged stamp below the border.
        [readMessage('51-provider-wrote-no-ar-forged-one-below.eml'), 'gate 5: border is Received #0 by mx1.messagingengine.com from mx.evil.example [203.0.113.66]; no Authentication-Results above it'],
        // The provider's stamp says fail; a forged pass below the border.
        [readMessage('46-forged-ar-below-border-provider-says-fail.eml'), 'gate 6: trusted dmarc=fail'],
        // Unsigned mail from the attacker's own server.
        [readMessage('56-unsigned-from-attacker-mta.eml'), 'gate 6: trusted dmarc=fail'],
      ] as const) {
        const c = await checkLatestTaggedMail(fastmail(mail), resolver);
        expect(c.status).toBe('warn');
        expect(c.detail).toMatch(SIGNLESS);
        expect(c.detail).toContain(JSON.stringify(gate).slice(0, -1));
        expect(c.fix).toMatch(/^nothing to change for this mail: anyone can send mail naming the agent and its task, and the gates refuse it as they should; .* check its DKIM signing \(agents\[0\]\.dkim_domain \(agent\.example\)\)$/);
        expect(c.fix).not.toMatch(/provider detect/);
      }
      // The same under the other presets: a pass stamp forged under the provider's own.
      const gmailForged = await checkLatestTaggedMail(configWith('provider = "gmail"', readProviderMessage('gmail/03-forged-pass-stamp-under-the-provider.eml')), resolver);
      expect(gmailForged.status).toBe('warn');
    });

    it("quotes the refusal, which holds the mail's own words, as one JSON string: the mail cannot end it and go on in the bridge's voice", async () => {
      const hostile = Buffer.from(readMessage('51-provider-wrote-no-ar-forged-one-below.eml').toString('latin1').replace('from mx.evil.example (mx.evil.example', 'from evil"),fix:"nothing (mx.evil.example'), 'latin1');
      const c = await checkLatestTaggedMail(fastmail(hostile), resolver);
      expect(c.status).toBe('warn');
      const quoted = c.detail.slice(c.detail.indexOf("quoting the mail's headers: ") + "quoting the mail's headers: ".length);
      const reason = JSON.parse(quoted) as string;
      expect(reason).toMatch(/^gate 5: border is Received #0 by mx1\.messagingengine\.com from evil"\),fix:"nothing \[203\.0\.113\.66\]; /);
      expect(quoted).toContain('from evil\\"),fix:\\"nothing');
    });

    it('still fails on genuine agent mail whose stamp the config cannot trust: its DKIM signature verifies', async () => {
      // The milter writes its results under its own Received: the self-hosted default (above) misses them.
      const m = 'provider = "self-hosted"\nauthserv_id = \'mail\\.person\\.example\'\nborder_host = \'mail\\.person\\.example\'';
      const c = await checkLatestTaggedMail(configWith(m, readProviderMessage('self-hosted/07-milter-writes-results-below-its-received.eml')), resolver);
      expect(c.status).toBe('fail');
      expect(c.detail).toMatch(/would be refused: gate 5: border is Received #\d+ by mail\.person\.example/);
      expect(c.fix).toMatch(/provider detect --from agent@agent\.example/);
      // A genuine Gmail reply under the default preset fails too (the first test here); the forged one does not.
      expect(await checkLatestTaggedMail(fastmail(readProviderMessage('gmail/01-genuine-done.eml')), resolver)).toMatchObject({ status: 'fail' });
      expect(await checkLatestTaggedMail(fastmail(readProviderMessage('gmail/03-forged-pass-stamp-under-the-provider.eml')), resolver)).toMatchObject({ status: 'warn' });
    });

    it('fails when the latest accepted reply would be refused now: the config, not the forgery, is then the suspect', async () => {
      const config = configWith(null, null);
      record(config.store.path, gmail, 'applied:done');
      record(config.store.path, readMessage('51-provider-wrote-no-ar-forged-one-below.eml'), 'auth:no-trusted-results');
      const c = await checkLatestTaggedMail(config, resolver);
      expect(c.status).toBe('fail');
      // The accepted reply is also the agent's mail just before the forgery (attack review 10, F3).
      expect(c.detail).toMatch(/carries no sign that it is the agent's .*; but the agent's mail before it, ledger #1 \(applied:done\) would be refused: gate 5: /);
      expect(c.fix).toMatch(/stamped like gmail/);
    });
  });
});

