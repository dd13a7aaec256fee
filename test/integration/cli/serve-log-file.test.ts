import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeConfigDir, minimalToml, type ConfigDir } from '../../helpers/config-dir.js';

/**
 * `serve`'s start-up summary names the log file it writes to. pino-roll goes on with the
 * highest-numbered file an earlier run left (src/log.ts), so after a rotation that is not `.1`.
 */
let c: ConfigDir | undefined;
afterAll(() => {
  if (c) rmSync(c.dir, { recursive: true, force: true });
});

/** Starts `serve` and resolves with its summary's `log` line, then stops it. */
function summaryLogLine(configPath: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const serve = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', '--config', configPath, 'serve'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    serve.stderr.on('data', (d: Buffer) => {
      err += d.toString('utf8');
      const line = /\n {2}log {6}(.*)\n/.exec(err);
      if (line) {
        serve.kill('SIGTERM');
        resolve(line[1]!);
      }
    });
    serve.once('close', (code) => reject(new Error(`serve exited ${code} before its summary: ${err}`)));
  });
}

describe('serve with log.file', () => {
  it('names the numbered file it goes on writing', async () => {
    c = makeConfigDir(`${minimalToml()}\n[log]\nfile = "logs/mailbridge.log"\n`);
    for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(c.dir, 'Maildir', sub), { recursive: true });
    mkdirSync(join(c.dir, 'logs'), { mode: 0o700 });
    // What an earlier run left after one rotation.
    writeFileSync(join(c.dir, 'logs', 'mailbridge.1.log'), '{"msg":"old"}\n', { mode: 0o600 });
    writeFileSync(join(c.dir, 'logs', 'mailbridge.2.log'), '{"msg":"newer"}\n', { mode: 0o600 });
    expect(await summaryLogLine(c.configPath)).toBe(`${join(c.dir, 'logs', 'mailbridge.2.log')} (numbered as it rotates), level info`);
  });
});
