// The dashboard's build: web/ → web/dist, served by the service (src/features/dashboard/). Relative
// asset URLs resolve against the <base href> the service writes into index.html, so the mount path
// is a runtime setting (PORTCULLIS_DASHBOARD_PATH), not a build one.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "./",
  logLevel: "warn",
  esbuild: { jsx: "automatic", legalComments: "none" },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    reportCompressedSize: false,
    chunkSizeWarningLimit: 1024,
    rollupOptions: {
      onwarn(warning, warn) {
        // Mantine marks its modules "use client" for React Server Components; meaningless here.
        if (warning.code !== "MODULE_LEVEL_DIRECTIVE") warn(warning);
      },
    },
  },
});
