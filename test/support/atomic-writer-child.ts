// node test/support/atomic-writer-child.ts <file>
//
// The child process of the sync crash test: rewrites <file> with writeAtomically (the function `souls sync` uses)
// as fast as it can, alternating two large versions, saying "writing N" before each write, until it is killed.
// A kill lands mid-write most of the time; the file must then be one version or the other, whole.
import { writeAtomically } from '../../src/interop/sync.ts';

/** Version k: about 1 MiB of lines that all carry k, so a mix of two versions is visible anywhere in the file. */
export function version(k: number): string {
  return `# Version ${k}\n\n${`- line of version ${k}, padded to make the write take a while ${'.'.repeat(60)}\n`.repeat(8_000)}<!-- end of version ${k} -->\n`;
}

if (import.meta.main) {
  const [file] = process.argv.slice(2);
  for (let n = 0; ; n++) {
    process.stdout.write(`writing ${n}\n`);
    writeAtomically(file, version(n % 2));
  }
}
