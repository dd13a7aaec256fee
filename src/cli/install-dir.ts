import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

/**
 * The folder a2a-mailbridge is installed in (the package root, holding `dist/`, `launchd/` and
 * `mailbridge.example.toml`): two levels above this module, whether it runs as `dist/cli/*.js`
 * or from source as `src/cli/*.ts`. Absolute, without a trailing slash.
 */
export function installDir(): string {
  return fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');
}

/** An absolute path inside the install folder, e.g. `packageFile('launchd/com.a2a-mailbridge.plist')`. */
export function packageFile(relative: string): string {
  return join(installDir(), relative);
}
