import { spawn } from 'node:child_process';

/** What a CLI run left: the exit code, and stdout (text and exact bytes) and stderr. */
export interface CliRun {
  status: number | null;
  stdout: string;
  stdoutBytes: Buffer;
  stderr: string;
}

/**
 * Runs the CLI from source (tsx) as a child process, like test/integration/cli/serve.test.ts, but
 * without blocking this process: servers the test runs here (a webhook receiver, a DNS zone)
 * keep answering while the child runs. The child is killed after `timeoutMs`. `closed`: that
 * stream's pipe is closed at once (it then reads as empty).
 */
export function runCli(args: readonly string[], o: { env?: NodeJS.ProcessEnv; timeoutMs?: number; closed?: 'stdout' | 'stderr' } = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
      env: { ...process.env, ...o.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // A reader gone before the child writes (`… | head -1` once head has its line): the child's
    // writes to that stream fail with EPIPE. Closed here, before the child has even started.
    if (o.closed !== undefined) child[o.closed].destroy();
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    const timer = setTimeout(() => child.kill('SIGKILL'), o.timeoutMs ?? 45_000);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (status) => {
      clearTimeout(timer);
      const stdoutBytes = Buffer.concat(out);
      resolve({ status, stdout: stdoutBytes.toString('utf8'), stdoutBytes, stderr: Buffer.concat(err).toString('utf8') });
    });
  });
}
