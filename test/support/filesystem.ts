import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';

/**
 * A small tmpfs mounted at `dir` (created if missing), so a test can fill a disk
 * or make a location read-only for real. Needs root (CI and the dev container
 * run as root); anywhere else it fails saying so, never silently.
 */
export function mountSmallFilesystem(dir: string, sizeKiB: number): { remountReadOnly(): void; unmount(): void } {
  mkdirSync(dir, { recursive: true });
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeKiB}k`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (error) {
    throw new Error(`this test mounts a ${sizeKiB} KiB tmpfs at ${dir} and needs root for it: ${String((error as { stderr?: unknown }).stderr ?? error)}`);
  }
  let mounted = true;
  return {
    remountReadOnly: () => void execFileSync('mount', ['-o', 'remount,ro', dir], { stdio: 'pipe' }),
    unmount: () => {
      if (mounted) execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
      mounted = false;
    },
  };
}
