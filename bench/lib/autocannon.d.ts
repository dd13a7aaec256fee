// The part of autocannon's API the load generator uses (autocannon ships no types of its own).
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  namespace autocannon {
    interface Request {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
      setupRequest?: (req: Request, context: Record<string, unknown>) => Request;
    }
    interface Options {
      url: string;
      connections?: number;
      duration?: number;
      method?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
      idReplacement?: boolean;
      requests?: Request[];
      timeout?: number;
    }
    interface Histogram {
      average: number;
      p50: number;
      p99: number;
      max: number;
    }
    interface Result {
      duration: number;
      errors: number;
      timeouts: number;
      non2xx: number;
      latency: Histogram;
      requests: Histogram & { total: number };
      statusCodeStats: Record<string, { count: number }>;
    }
    interface Instance extends EventEmitter {
      stop(): void;
    }
  }
  function autocannon(opts: autocannon.Options, cb: (err: Error | null, result: autocannon.Result) => void): autocannon.Instance;
  export = autocannon;
}
