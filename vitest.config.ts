import { defineConfig } from 'vitest/config';

// Three projects (`npm test` runs them all; `npx vitest run --project unit` one of them):
// - unit: fast, opens no sockets (seconds);
// - property: the property tests of the message judge (test/unit/**/*.property.test.ts), which
//   take longer, in a project of their own so the unit project stays fast;
// - integration: drives Dovecot, loopback HTTP and child processes. Files run in parallel: each
//   starts its own Dovecot, webhook receiver, DNS zone and bridge on ports of its own, under a
//   temp dir of its own.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          exclude: ['test/unit/**/*.property.test.ts'],
          environment: 'node',
          // The tests that show a parser or cleaner is linear run it on millions of characters: about
          // a second alone, over vitest's default 5 s on 2 cores shared with other work (a trial at a
          // load average of 6 to 11). A quadratic one would still run for hours, far past 30 s.
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: 'property',
          include: ['test/unit/**/*.property.test.ts'],
          environment: 'node',
          testTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          environment: 'node',
          globalSetup: ['test/helpers/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          // The files wait on Dovecot, sockets and child processes far more than they compute: more
          // of them at once than there are cores.
          maxWorkers: 3,
        },
      },
    ],
  },
});
