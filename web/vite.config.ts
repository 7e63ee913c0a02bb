import { defineConfig } from 'vite';

// `npm run build:web` (run by `npm install` through `prepare`) bundles web/ into web/dist, which the server serves
// at / (index.html) and /assets/*. JSX goes through Vite's own transformer (oxc) with Preact's automatic runtime,
// so no framework plugin (and no Babel) is needed.
const root = decodeURIComponent(new URL('.', import.meta.url).pathname);

export default defineConfig({
  root,
  base: '/',
  publicDir: false,
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    // Fonts are few and small: keep them as files under /assets (served with their own type), not inlined.
    assetsInlineLimit: 0,
    reportCompressedSize: false,
  },
  server: { proxy: { '/graphql': { target: 'http://127.0.0.1:4000', ws: true } } },
});
