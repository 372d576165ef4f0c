// The dashboard's build: `npm run build` writes dist/ (CMake passes --outDir build/src/webui/dist),
// which cmake/embed_assets.cmake turns into the gpupool binary's table of files.
import { defineConfig } from 'vite';
import vue from '@vitejs/plugin-vue';

export default defineConfig({
  plugins: [vue()],
  build: {
    // Everything is served from the binary: no inline scripts or styles (the server's
    // Content-Security-Policy forbids them), no preload polyfill injected into index.html.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 1024,
    sourcemap: false,
  },
  server: {
    // `npm run dev` against a running `gpupool serve` on :8080.
    proxy: { '/api': 'http://127.0.0.1:8080' },
  },
});
