import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { REPO } from '../faults/bridge-process.js';

/**
 * `a2a-mailbridge demo` stopped by Ctrl-C (SIGINT) or SIGTERM while it runs: its temporary folder
 * (the bridge's bearer, the webhook secret, the config, the store) is removed all the same, as the
 * README promises ("It removes everything"), and it exits non-zero: 128 + the signal's number.
 */
function interruptedDemo(signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null; folder: string; stderr: string; out: string }> {
  return new Promise((resolve, reject) => {
    // The agent's reply held for 10 minutes: the signal always comes while the demo waits for it, however loaded the machine.
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'demo', '--reply-delay', '600000'], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let stderr = '';
    let folder = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      // The first call was answered (WORKING): the demo now waits for the agent's reply mail.
      const m = /mailbox {6}Maildir (\S+)\/Maildir [^]*\n {3}← TASK_STATE_WORKING/.exec(out);
      if (m && folder === '') {
        folder = m[1]!;
        expect(existsSync(folder)).toBe(true);
        child.kill(signal);
      }
    });
    child.on('error', reject);
    child.on('exit', (code, sig) => resolve({ code, signal: sig, folder, stderr, out }));
  });
}

/** The demo run with its stdout's reader gone after the transcript named the folder (`demo | head -4`). */
function cutShortDemo(): Promise<{ code: number | null; folder: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'demo', '--reply-delay', '600000'], { cwd: REPO, stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    let folder = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const m = /mailbox {6}Maildir (\S+)\/Maildir /.exec(out);
      if (m && folder === '') {
        folder = m[1]!;
        // The reader closes the pipe: the demo's next line fails with EPIPE.
        child.stdout.destroy();
      }
    });
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, folder }));
  });
}

describe('a2a-mailbridge demo interrupted', () => {
  it('its output cut short (demo | head): its temporary folder is gone and it exits 141, not 0', async () => {
    const r = await cutShortDemo();
    expect(r.folder).toMatch(/a2a-mailbridge-demo-/);
    expect(r.code).toBe(141);
    expect(existsSync(r.folder)).toBe(false);
  });

  it('SIGINT (Ctrl-C) while the demo waits for the reply: its temporary folder is gone and it exits 130', async () => {
    const r = await interruptedDemo('SIGINT');
    expect(r.folder).toMatch(/a2a-mailbridge-demo-/);
    expect({ code: r.code, signal: r.signal }).toEqual({ code: 130, signal: null });
    expect(existsSync(r.folder)).toBe(false);
    expect(r.stderr).toBe('demo: stopped by SIGINT; removing its temporary folder\n');
    // No step that did not happen is printed after the signal (the reply was never mailed).
    expect(r.out).not.toContain('cloud agent: webhook');
    expect(r.out).not.toContain('2) SendMessage');
  });

  it('SIGTERM: the same, exit 143', async () => {
    const r = await interruptedDemo('SIGTERM');
    expect({ code: r.code, signal: r.signal }).toEqual({ code: 143, signal: null });
    expect(existsSync(r.folder)).toBe(false);
  });
});
