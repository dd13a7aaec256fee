import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { VERSION } from '../../../src/a2a/agent-card.js';
import { makeConfigDir, minimalToml, type ConfigDir } from '../../helpers/config-dir.js';
import { freePort } from '../../helpers/free-port.js';

/**
 * `serve` on stderr: a start-up summary and its warnings, and readable log lines when
 * stderr is a terminal. The bridge runs as a child process; the test reads its stderr until the
 * summary is complete (an event, not a sleep), then stops it with SIGTERM.
 */
const dirs: ConfigDir[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d.dir, { recursive: true, force: true });
});

/** Runs `argv` and resolves with its output once `done` matches it (or rejects after 30 s). */
function runUntil(argv: string[], done: RegExp): Promise<string> {
  const env = { ...process.env };
  delete env.JOURNAL_STREAM;
  delete env.INVOCATION_ID;
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no match for ${done} within 30 s:\n${out}`));
    }, 30_000);
    const on = (d: Buffer): void => {
      out += d.toString('utf8');
      if (done.test(out)) {
        clearTimeout(timer);
        child.kill('SIGTERM');
        child.once('close', () => resolve(out));
      }
    };
    child.stdout.on('data', on);
    child.stderr.on('data', on);
  });
}

const serveArgv = (c: ConfigDir): string[] => [process.execPath, '--import', 'tsx', 'src/cli/main.ts', '--config', c.configPath, 'serve'];

function maildirConfig(): ConfigDir {
  const c = makeConfigDir(minimalToml({ webhookUrl: 'https://hooks.agent.example/secret-path/trigger' }));
  for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(c.dir, 'Maildir', sub), { recursive: true });
  dirs.push(c);
  return c;
}

describe('serve prints a start-up summary on stderr', () => {
  it('version, config, store, mailbox reachable, watch, each agent and its webhook origin, the log; example names as a warning', async () => {
    const c = maildirConfig();
    const out = await runUntil(serveArgv(c), /\n {2}log {6}.*\n(warning: .*\n)*/);
    const lines = out.split('\n').filter((l) => !l.startsWith('{'));
    const at = lines.indexOf(`a2a-mailbridge ${VERSION} is serving`);
    expect(at, out).toBeGreaterThanOrEqual(0);
    expect(lines.slice(at + 1, at + 7)).toEqual([
      `  config   ${c.configPath}`,
      expect.stringMatching(new RegExp(`^ {2}store {4}${join(c.dir, 'state', 'bridge.sqlite')} \\(\\d+(\\.\\d)? (bytes|KiB|MiB)\\)$`)),
      `  mailbox  maildir ${join(c.dir, 'Maildir')}: reachable (nothing new)`,
      "  watch    off: replies, webhook retries and deadlines move only on callers' calls (mailbox.watch = true to change)",
      expect.stringMatching(/^ {2}agent {4}grok {2}http:\/\/127\.0\.0\.1:\d+\/agents\/grok {2}→ webhook https:\/\/hooks\.agent\.example \(both\)$/),
      '  log      stderr as JSON lines, level info',
    ]);
    expect(lines[at + 7]).toBe(
      `warning: mailbox.address = me@bridge.test, agents[0].address = agent@agent.example, agents[0].dkim_domain = agent.example, agents[0].webhook.url = https://hooks.agent.example are example names (RFC 2606): no real mail or agent lives there; replace them in ${c.configPath}`,
    );
    expect(out).not.toContain('secret-path'); // a webhook path may be a capability: only its origin is shown
  });

  it('an unreachable mailbox is a warning at start', async () => {
    const port = await freePort();
    const c = makeConfigDir(
      minimalToml().replace(
        /\[mailbox\][\s\S]*?path = "Maildir"\n/,
        () => `[mailbox]\nkind = "imap"\naddress = "me@bridge.test"\n[mailbox.imap]\nhost = "127.0.0.1"\nport = ${port}\ntls = false\nuser = "me"\npassword_file = "imap-password"\n`,
      ),
    );
    dirs.push(c);
    const out = await runUntil(serveArgv(c), /\nwarning: the mailbox is unreachable: .*\n/);
    expect(out).toContain(`  mailbox  imap me at 127.0.0.1:${port}, folder INBOX: UNREACHABLE\n`);
    expect(out).toContain(`; replies are read once it is back (a2a-mailbridge --config ${c.configPath} doctor checks the settings)\n`);
  });
});

const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;

describe('serve on a terminal', () => {
  it.skipIf(!hasScript)('writes readable log lines, not JSON, when stderr is a terminal (run under script(1) for a pty)', async () => {
    const c = maildirConfig();
    const quoted = serveArgv(c).map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
    // A pty ends lines with \r\n.
    const out = (await runUntil(['script', '-qfec', quoted, '/dev/null'], /\n {2}log {6}[^\n]*\n/)).replaceAll('\r\n', '\n');
    expect(out).toContain('  log      stderr as readable lines, level info');
    expect(out).toMatch(/\[\d\d:\d\d:\d\d\] .*INFO.*: .*a2a-mailbridge listening/);
    expect(out).not.toContain('"level":30');
  });
});
