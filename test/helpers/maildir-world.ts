import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig, type Config } from '../../src/config/config.js';
import { startDnsZone, type DnsZone } from '../../src/demo/dns-zone.js';
import { dkimTxtName, generateDkimKey } from '../../src/demo/reply-mail.js';
import { AGENT_DOMAIN, SELECTOR } from './bridge-harness.js';
import { makeConfigDir, minimalToml, TEST_WEBHOOK_BEARER, TEST_WEBHOOK_SECRET, type ConfigDir } from './config-dir.js';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver.js';

/** What a bridge on a real Maildir needs around it: the agent's DKIM key in a DNS zone, a webhook receiver, a config that checks at every call. */
export interface MaildirWorld {
  zone: DnsZone;
  receiver: WebhookReceiver;
  dir: ConfigDir;
  config: Config;
  /** The config's Maildir, with cur/, new/ and tmp/ made. */
  maildir: string;
  key: ReturnType<typeof generateDkimKey>;
  /** Stops the zone and the receiver and removes the config folder. */
  close(): Promise<void>;
}

/** Starts a {@link MaildirWorld} (the bridge is the caller's to start, on `config`). */
export async function startMaildirWorld(): Promise<MaildirWorld> {
  const key = generateDkimKey();
  const zone = await startDnsZone([{ name: dkimTxtName(SELECTOR, AGENT_DOMAIN), type: 'TXT', data: key.publicKeyTxt }]);
  const receiver = await startWebhookReceiver({ secret: TEST_WEBHOOK_SECRET, bearer: TEST_WEBHOOK_BEARER });
  const dir = makeConfigDir(`${minimalToml({ webhookUrl: receiver.url }).replace('[mailbox]', '[mailbox]\ncheck_interval_s = 0')}\n[dns]\nservers = ["${zone.address}"]\n`);
  const config = loadConfig(dir.configPath);
  const maildir = config.mailbox.maildirPath!;
  for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(maildir, sub), { recursive: true });
  return {
    zone,
    receiver,
    dir,
    config,
    maildir,
    key,
    async close() {
      await receiver.close();
      await zone.close();
      rmSync(dir.dir, { recursive: true, force: true });
    },
  };
}
