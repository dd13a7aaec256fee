declare module 'pino-roll' {
  import type { DestinationStream } from 'pino';
  /** pino-roll 4: a SonicBoom (a pino destination) that rolls its file by size (and/or frequency); see its README. */
  export default function pinoRoll(options: {
    file: string;
    size?: string | number;
    frequency?: string | number;
    extension?: string;
    mkdir?: boolean;
    sync?: boolean;
    /** The mode of each file it creates (SonicBoom's `mode`), before the umask. */
    mode?: number;
    /** `count` files kept; with `removeOtherLogFiles`, the current one included, whichever process wrote them. */
    limit?: { count?: number; removeOtherLogFiles?: boolean };
  }): Promise<DestinationStream>;
}
