import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { doctor, secretRefs } from '../../../src/cli/doctor.js';
import { unusedSecretChecks } from '../../../src/cli/doctor-unused-secrets.js';
import { PLACEHOLDER_PREFIX, initFiles } from '../../../src/cli/init.js';
import { EXAMPLE_SECRET_FILES } from '../../../src/config/secret-kinds.js';
import { makeConfigDir, minimalToml, writeSecret } from '../../helpers/config-dir.js';

/** The warnings for a config dir's text, as doctor computes them from the raw TOML. */
function unused(c: { configPath: string; dir: string }, toml: string) {
  const doc = parseToml(toml);
  return unusedSecretChecks(doc, c.configPath, secretRefs(doc, c.dir));
}

describe('doctor: secret files the config does not use are warnings naming the key and the fix', () => {
  it('the IMAP password placeholder left beside a Maildir config', () => {
    const c = makeConfigDir(minimalToml());
    const file = writeSecret(c.dir, 'imap-password', `${PLACEHOLDER_PREFIX}YOUR-IMAP-APP-PASSWORD`);
    expect(unused(c, minimalToml())).toEqual([
      {
        name: 'unused secret file',
        status: 'warn',
        detail: `${file} holds a placeholder and no key of the config names it (the example config names it in mailbox.imap.password_file; mailbox.kind = "maildir" reads no IMAP password)`,
        fix: `delete it (rm ${file}), or write the real secret into it and name it in mailbox.imap.password_file`,
      },
    ]);
    // A real secret is not a leftover of init: only placeholders are named.
    writeSecret(c.dir, 'imap-password', 'a-real-password');
    expect(unused(c, minimalToml())).toEqual([]);
  });

  it("init's secrets/ folder: the webhook bearer placeholder of an agent that only signs", () => {
    const c = makeConfigDir(minimalToml());
    mkdirSync(join(c.dir, 'secrets'), { mode: 0o700 });
    const file = writeSecret(join(c.dir, 'secrets'), 'webhook-bearer', `${PLACEHOLDER_PREFIX}THE-WEBHOOK-TRIGGER-TOKEN`);
    writeFileSync(join(c.dir, 'secrets', 'notes.txt'), 'nothing to see\n', { mode: 0o600 });
    const toml = minimalToml().replace('auth = "both"\nbearer_file = "webhook-bearer"\n', 'auth = "standard-webhooks"\n');
    expect(unused(c, toml)).toEqual([
      {
        name: 'unused secret file',
        status: 'warn',
        detail: `${file} holds a placeholder and no key of the config names it (the example config names it in agents[0].webhook.bearer_file; no agent's webhook has auth = "bearer" or "both")`,
        fix: `delete it (rm ${file}), or write the real secret into it and name it in agents[0].webhook.bearer_file`,
      },
    ]);
  });

  it('every secret file init writes or secrets.example/ shows is known by its name, with the key that names it in the example config', () => {
    const example = readFileSync('mailbridge.example.toml', 'utf8');
    const secrets = initFiles(example, 0).filter((f) => f.path.startsWith('secrets/'));
    for (const f of secrets) {
      const key = EXAMPLE_SECRET_FILES[f.path.slice('secrets/'.length)];
      expect(key, f.path).toBeDefined();
      const leaf = key!.split('.').at(-1)!;
      expect(example, f.path).toMatch(new RegExp(`^(# )?${leaf} = "${f.path}"`, 'm'));
    }
    // secrets.example/ shows one file per kind, the webhook bearer too, which init does not write.
    expect(Object.keys(EXAMPLE_SECRET_FILES).sort()).toEqual(readdirSync('secrets.example').filter((n) => n !== 'README.md').sort());
  });

  it('a bearer_file or secret_file key that the webhook auth does not read', () => {
    const c = makeConfigDir(minimalToml());
    const signing = minimalToml().replace('auth = "both"', 'auth = "standard-webhooks"');
    expect(unused(c, signing)).toEqual([
      {
        name: 'secret agents[0].webhook.bearer_file',
        status: 'warn',
        detail: `${c.dir}/webhook-bearer is not read: agents[0].webhook.auth = "standard-webhooks" sends no bearer`,
        fix: `remove agents[0].webhook.bearer_file from ${c.configPath}, or set agents[0].webhook.auth = "both" to send the bearer as well`,
      },
    ]);
    writeSecret(c.dir, 'webhook-secret', `${PLACEHOLDER_PREFIX}X`);
    const bearer = minimalToml().replace('auth = "both"', 'auth = "bearer"');
    expect(unused(c, bearer)).toEqual([
      {
        name: 'secret agents[0].webhook.secret_file',
        status: 'warn',
        detail: `${c.dir}/webhook-secret is not read: agents[0].webhook.auth = "bearer" signs nothing (the file still holds a placeholder)`,
        fix: `remove agents[0].webhook.secret_file from ${c.configPath}, or set agents[0].webhook.auth = "both" to sign the webhooks as well`,
      },
    ]);
    // Every file the config reads, and the config file itself, is never called unused.
    expect(unused(c, minimalToml())).toEqual([]);
  });

  it('doctor reports them after the secret checks, and they do not fail it', async () => {
    const toml = minimalToml({ webhookUrl: 'http://hooks.agent.example/x' }).replace('auth = "both"', 'auth = "standard-webhooks"');
    const c = makeConfigDir(toml);
    const r = await doctor(c.configPath);
    expect(r.checks.map((x) => [x.name, x.status])).toEqual([
      ['config file', 'ok'],
      ['secret server.bearer_file', 'ok'],
      ['secret agents[0].webhook.secret_file', 'ok'],
      ['secret agents[0].webhook.bearer_file', 'warn'],
      ['config', 'fail'],
      ['store, mailbox, webhook', 'skip'],
    ]);
    // Plain http to a host that is not loopback is refused by the config loader already: a failure naming the key, and https as the fix.
    expect(r.checks.find((x) => x.name === 'config')).toMatchObject({
      detail: 'config key agents[0].webhook.url: plain http is allowed only to a loopback address',
      fix: 'use https',
    });
  });
});
