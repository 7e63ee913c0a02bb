// Run by `npm install` (the prepare script), with `npm start`'s Node flags: fills the compile cache `souls` reads
// (src/cli/compile-cache.js) with every module of src/, loaded once, so that a server's first start after an
// install never loads Node's TypeScript compiler (about 20 MiB it would keep). Worker entry points are left out:
// loading one runs it. A failure here costs only that memory, so it is reported and the install goes on.
import { readdirSync } from 'node:fs';
import { constants, flushCompileCache } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { enableSoulsCompileCache } from '../src/cli/compile-cache.js';

const src = fileURLToPath(new URL('../src', import.meta.url));
try {
  const { status, directory, message } = enableSoulsCompileCache();
  // ALREADY_ENABLED: NODE_COMPILE_CACHE turned it on as Node started.
  if (status !== constants.compileCacheStatus.ENABLED && status !== constants.compileCacheStatus.ALREADY_ENABLED) {
    console.log(`Compile cache not warmed: ${message}.`);
  } else {
    const modules = readdirSync(src, { recursive: true }).filter((file) => file.endsWith('.ts') && !file.endsWith('-worker.ts'));
    for (const file of modules.sort()) await import(pathToFileURL(join(src, file)).href);
    flushCompileCache();
    console.log(`Compile cache warmed: ${modules.length} modules in ${directory}`);
  }
} catch (error) {
  console.warn(`Compile cache not warmed (a first start will load Node's TypeScript compiler): ${error instanceof Error ? error.message : error}`);
}
