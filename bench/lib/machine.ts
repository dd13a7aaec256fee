import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { cpus, totalmem, release, platform } from 'node:os';

/** What the figures were measured on: they mean nothing without it. */
export interface Machine {
  cpu: string;
  cores: number;
  ramGiB: number;
  node: string;
  os: string;
  dovecot: string;
  date: string;
}

function cpuModel(): string {
  try {
    const line = readFileSync('/proc/cpuinfo', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('model name'));
    if (line) return line.slice(line.indexOf(':') + 1).trim();
  } catch {
    // not Linux
  }
  return cpus()[0]?.model ?? 'unknown';
}

function osName(): string {
  try {
    const pretty = /^PRETTY_NAME="?([^"\n]+)"?$/m.exec(readFileSync('/etc/os-release', 'utf8'));
    if (pretty) return `${pretty[1]} (${platform()} ${release()})`;
  } catch {
    // no os-release
  }
  return `${platform()} ${release()}`;
}

function dovecotVersion(): string {
  for (const bin of ['dovecot', '/usr/sbin/dovecot']) {
    try {
      return execFileSync(bin, ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      // try the next
    }
  }
  return 'not installed';
}

export function describeMachine(): Machine {
  return {
    cpu: cpuModel(),
    cores: cpus().length,
    ramGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    os: osName(),
    dovecot: dovecotVersion(),
    date: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
  };
}

/** One line for the top of a results section. */
export function machineLine(m: Machine = describeMachine()): string {
  return `${m.cpu}, ${m.cores} cores, ${m.ramGiB} GiB RAM, Node ${m.node}, ${m.os}, Dovecot ${m.dovecot}; measured ${m.date}`;
}

/** CPU seconds (user + system, its own only) of one process; NaN when it is gone. */
function cpuOf(pid: number | 'self'): { cpu: number; ppid: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After the comm: state(0) ppid(1) … utime(11) stime(12), in clock ticks. Children's time
    // (cutime, cstime) is left out: each descendant is sampled itself, and counting a reaped
    // child in its parent too would count it twice.
    const ticks = Number(f[11]) + Number(f[12]);
    return { cpu: ticks / 100, ppid: Number(f[1]) };
  } catch {
    return { cpu: Number.NaN, ppid: -1 };
  }
}

function busySeconds(): { busy: number; total: number } {
  try {
    const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const idle = (cpu[3] ?? 0) + (cpu[4] ?? 0);
    const total = cpu.slice(0, 8).reduce((a, b) => a + b, 0);
    return { busy: (total - idle) / 100, total: total / 100 };
  } catch {
    return { busy: Number.NaN, total: Number.NaN };
  }
}

export interface LoadReading {
  seconds: number;
  /** CPU used by this benchmark's processes (it and every descendant), in cores on average. */
  oursCores: number;
  /** CPU used by every other process on the machine, in cores on average. */
  othersCores: number;
  loadBefore: number;
  loadAfter: number;
}

/**
 * Measures how busy the machine was with other work while a benchmark ran (shared machines:
 * figures taken while other processes use the CPU are lower than the machine can do). Our own
 * process tree is sampled every 250 ms so that children that exit meanwhile are still counted
 * (up to their last sample: an approximation that leans towards "others").
 */
export function startLoadMeter(): { stop(): LoadReading } {
  const loadavg = (): number => Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
  const seen = new Map<number, { first: number; last: number }>();
  const sample = (): void => {
    const parents = new Map<number, number>();
    for (const name of readdirSafe('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      const pid = Number(name);
      const { ppid } = cpuOf(pid);
      if (ppid >= 0) parents.set(pid, ppid);
    }
    const isOurs = (pid: number): boolean => {
      for (let p = pid, hops = 0; p > 1 && hops < 64; p = parents.get(p) ?? 0, hops++) if (p === process.pid) return true;
      return false;
    };
    for (const pid of parents.keys()) {
      if (!isOurs(pid)) continue;
      const { cpu } = cpuOf(pid);
      if (Number.isNaN(cpu)) continue;
      const s = seen.get(pid);
      if (s) s.last = cpu;
      else seen.set(pid, { first: 0, last: cpu });
    }
  };
  // Our own process counts from its value now; processes born later count from zero.
  seen.set(process.pid, { first: cpuOf(process.pid).cpu, last: cpuOf(process.pid).cpu });
  const before = busySeconds();
  const started = performance.now();
  const loadBefore = loadavg();
  sample();
  for (const [pid, s] of seen) if (pid !== process.pid) s.first = s.last; // already running: count from now
  const timer = setInterval(sample, 250);
  timer.unref();
  return {
    stop(): LoadReading {
      clearInterval(timer);
      sample();
      const after = busySeconds();
      const seconds = (performance.now() - started) / 1000;
      const ours = [...seen.values()].reduce((a, s) => a + Math.max(0, s.last - s.first), 0);
      const busy = after.busy - before.busy;
      return { seconds, oursCores: ours / seconds, othersCores: Math.max(0, busy - ours) / seconds, loadBefore, loadAfter: loadavg() };
    },
  };
}

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/**
 * One sentence on how busy the machine was with other work during the run; `timed: false` for a
 * bench whose figures the load does not move (instruction counts), which then has no advice to add.
 */
export function describeLoad(r: LoadReading, o: { timed?: boolean } = {}): string {
  const busy = r.othersCores >= 0.1 && o.timed !== false ? '; figures on a quiet machine would be better' : '';
  return `Other processes on the machine used ${r.othersCores.toFixed(2)} of ${cpus().length} cores on average during this run (load average ${r.loadBefore.toFixed(2)} → ${r.loadAfter.toFixed(2)})${busy}.`;
}
