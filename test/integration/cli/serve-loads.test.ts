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
// tmp/ (git-ignored) may not exist yet in a fresh clone: service.test.ts makes it only in its beforeAll.
mkdirSync(resolve('tmp'), { recursive: true });
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

const BUILTINS_AT_EXIT = resolve('test/fixtures/builtins-at-exit.cjs');

/**
 * Starts the built `serve` at debug level and resolves with the packages its start-up line names
 * and the built-in modules it had loaded when it stopped, just after that line.
 */
function loadedAtStart(): Promise<{ packages: string[]; builtins: string[] }> {
  const env = { ...process.env };
  delete env.JOURNAL_STREAM;
  delete env.INVOCATION_ID;
  return new Promise((done, reject) => {
    const child = spawn(process.execPath, ['-r', BUILTINS_AT_EXIT, main, '--config', c.configPath, 'serve', '--log-level', 'debug'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    let packages: string[] | undefined;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no start-up line within 30 s:\n${err}`));
    }, 30_000);
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString('utf8');
      const line = err.split('\n').find((l) => l.includes('"libraries loaded at start"'));
      if (!line || packages) return;
      clearTimeout(timer);
      packages = (JSON.parse(line) as { packages: string[] }).packages;
      child.kill('SIGTERM');
    });
    child.once('close', () => {
      const exitLine = err.split('\n').find((l) => l.startsWith('{"builtinsLoaded"'));
      if (!packages || !exitLine) return reject(new Error(`no start-up line or no exit line:\n${err}`));
      done({ packages, builtins: (JSON.parse(exitLine) as { builtinsLoaded: string[] }).builtinsLoaded });
    });
  });
}

describe('serve on a Maildir config, as built', () => {
  it('loads the store, the logger and the webhook signer, and none of the libraries it does not use yet', async () => {
    const { packages, builtins } = await loadedAtStart();
    expect(packages).toEqual(expect.arrayContaining(['better-sqlite3', 'pino', 'smol-toml', 'standardwebhooks']));
    for (const lazy of ['imapflow', 'mailparser', 'mailauth', 'libmime', 'nodemailer', 'undici', 'prom-client', 'pino-pretty', 'pino-roll', '@a2a-js/sdk', 'dns-packet']) {
      expect(packages, lazy).not.toContain(lazy);
    }
    // Built-ins loaded by first use as well: DEFLATE packing (with its archive helpers, about 15
    // modules) and the DKIM resolver. Both have been imported at the top of a module by mistake.
    expect(builtins).toContain('http');
    for (const lazy of ['zlib', 'dns/promises']) expect(builtins, lazy).not.toContain(lazy);
  });
});
