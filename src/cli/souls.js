#!/usr/bin/env node
// The `souls` program as `npm start` and the package's bin run it: Node's compile cache on (./compile-cache.js),
// then the command line. `npm install` fills the cache (scripts/warm-compile-cache.js), so even a first start reads
// no TypeScript uncompiled.
import { flushCompileCache } from 'node:module';
import { enableSoulsCompileCache } from './compile-cache.js';

enableSoulsCompileCache();
const { main } = await import('./index.ts');
// Written now rather than at exit: a first start stopped by SIGKILL (a container's) still leaves it warm.
flushCompileCache();
main();
