// Node strips TypeScript with a WebAssembly compiler that stays resident (about 20 MiB) once loaded. Its compile
// cache keeps the stripped and compiled code on disk; when it is on before the first .ts file is read and holds every
// file a process loads, Node never loads the compiler. Plain JavaScript on purpose, for the same reason.
// NODE_COMPILE_CACHE chooses another folder; NODE_DISABLE_COMPILE_CACHE=1 turns it off.
import { enableCompileCache } from 'node:module';
import { fileURLToPath } from 'node:url';

export function enableSoulsCompileCache() {
  return enableCompileCache(process.env.NODE_COMPILE_CACHE || fileURLToPath(new URL('../../node_modules/.cache/souls', import.meta.url)));
}
