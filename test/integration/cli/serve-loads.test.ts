import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundle } from '../../../scripts/build.js';
import { makeConfigDir, minimalToml, type ConfigDir } from '../../helpers/config-dir.js';

/**
 * What `serve` loads at start on a Maildir config, in the build that ships (scripts/build.ts, the
 * bundle `npm run build` writes): it says so itself, at debug level ('libraries loaded at start',
 * src/cli/serve.ts). The IMAP client, the mail parsers, DKIM, the HTTP client of webhooks and
 * push notifications, the metrics library and the optional log destinations wait for their first
 * use (docs/architecture.md, "Start-up and memory").
 */
let main: string;
let c: ConfigDir;
const out = mkdtempSync(join(resolve('tmp'), 'mb-build-'));
beforeAll(async () => {
  main = await bundle(out);
  c = makeConfigDir(minimalToml());
  for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(c.dir, 'Maildir', sub), { recursive: true });
});
afterAll(() => {
  rmSync(out, { recursive: true, force: true });
  if (c) rmSync(c.dir, { recursive: true, force: true });
});

/** Starts the built `serve` at debug level and resolves with the packages its start-up line names. */
function packagesAtStart(): Promise<string[]> {
  const env = { ...process.env };
  delete env.JOURNAL_STREAM;
  delete env.INVOCATION_ID;
  return new Promise((done, reject) => {
    const child = spawn(process.execPath, [main, '--config', c.configPath, 'serve', '--log-level', 'debug'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no start-up line within 30 s:\n${err}`));
    }, 30_000);
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString('utf8');
      const line = err.split('\n').find((l) => l.includes('"libraries loaded at start"'));
      if (!line) return;
      clearTimeout(timer);
      child.kill('SIGTERM');
      child.once('close', () => done((JSON.parse(line) as { packages: string[] }).packages));
    });
  });
}

describe('serve on a Maildir config, as built', () => {
  it('loads the store, the logger and the webhook signer, and none of the libraries it does not use yet', async () => {
    const packages = await packagesAtStart();
    expect(packages).toEqual(expect.arrayContaining(['better-sqlite3', 'pino', 'smol-toml', 'standardwebhooks']));
    for (const lazy of ['imapflow', 'mailparser', 'mailauth', 'libmime', 'nodemailer', 'undici', 'prom-client', 'pino-pretty', 'pino-roll', '@a2a-js/sdk', 'dns-packet']) {
      expect(packages, lazy).not.toContain(lazy);
    }
  });
});
