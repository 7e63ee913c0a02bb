#!/usr/bin/env node
// The `souls` program as `npm start` and the package's bin run it. Plain JavaScript on purpose: Node strips
// TypeScript with a WebAssembly compiler that stays resident (about 20 MiB) once loaded, and its compile cache, which
// keeps the stripped and compiled code on disk, must be on before the first .ts file is read for Node to skip it.
// NODE_COMPILE_CACHE chooses another folder; NODE_DISABLE_COMPILE_CACHE=1 turns it off.
import { enableCompileCache, flushCompileCache } from 'node:module';
import { fileURLToPath } from 'node:url';

enableCompileCache(process.env.NODE_COMPILE_CACHE || fileURLToPath(new URL('../../node_modules/.cache/souls', import.meta.url)));
const { main } = await import('./index.ts');
// Written now rather than at exit: a first start stopped by SIGKILL (a container's) still leaves it warm.
flushCompileCache();
main();
