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
const dirs: ConfigDir[] = [];
afterAll(() => {
  if (c) rmSync(c.dir, { recursive: true, force: true });
  for (const d of dirs) rmSync(d.dir, { recursive: true, force: true });
});

/** A config with a Maildir in place and `extra` TOML appended. */
function configWith(extra: string): ConfigDir {
  const d = makeConfigDir(`${minimalToml()}\n${extra}`);
  dirs.push(d);
  for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(d.dir, 'Maildir', sub), { recursive: true });
  return d;
}

/** Starts `serve`, sends `signal` once its summary is out, and resolves with its exit code and what it wrote on stderr after the summary. */
function stderrOfStop(configPath: string, signal: NodeJS.Signals): Promise<{ code: number | null; after: string }> {
  return new Promise((resolve) => {
    const serve = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', '--config', configPath, 'serve'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    let summaryEnd = -1;
    serve.stderr.on('data', (d: Buffer) => {
      err += d.toString('utf8');
      const line = summaryEnd < 0 ? /\n {2}log {6}.*\n/.exec(err) : null;
      if (line) {
        summaryEnd = line.index + line[0].length;
        serve.kill(signal);
      }
    });
    // The summary's warnings (the example addresses of minimalToml) are left out.
    const rest = (): string => err.slice(summaryEnd).split(/(?<=\n)/).filter((l) => !l.startsWith('warning: ')).join('');
    serve.once('close', (code) => resolve({ code, after: summaryEnd < 0 ? `(no summary) ${err}` : rest() }));
  });
}

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

describe('serve stopped at a terminal', () => {
  it('with log.file: the stopping and stopped lines also reach stderr, one short line each', async () => {
    const d = configWith('[log]\nfile = "logs/mailbridge.log"\n');
    const r = await stderrOfStop(d.configPath, 'SIGINT');
    expect(r.code).toBe(0);
    expect(r.after).toMatch(/^a2a-mailbridge is stopping \(SIGINT\)\na2a-mailbridge stopped \(took \d+ ms\)\n$/);
  });

  it('with the log on stderr: the log lines only, never twice', async () => {
    const d = configWith('');
    const r = await stderrOfStop(d.configPath, 'SIGTERM');
    expect(r.code).toBe(0);
    const lines = r.after.trimEnd().split('\n');
    expect(lines.map((l) => (JSON.parse(l) as { msg: string }).msg).filter((m) => m === 'stopping' || m === 'stopped')).toEqual(['stopping', 'stopped']);
  });
});
