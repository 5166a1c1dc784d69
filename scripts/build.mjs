// Builds what `npm start` runs: src/main.ts and everything it imports in one ES module,
// dist/portcullis.mjs (packages stay in node_modules), the node agent's src/node-main.ts as
// dist/portcullis-node.mjs, with a source map for stack traces; and the
// web dashboard (web/dist) when its sources changed since it was last built (build-dashboard.mjs).
// Running the bundle instead of the sources through tsx spares the service tsx's loader thread and
// its compiled-source caches (about 35 MB of RSS) and the compile work at every start. The source map
// carries mappings only, not the sources' text (`sourcesContent: false`): stack traces need nothing
// more, and `--enable-source-maps` holds the whole map in memory (19 MB less RSS without the text).
import { rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { buildDashboardIfStale } from "./build-dashboard.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
rmSync(`${root}/dist`, { recursive: true, force: true });
const options = {
  absWorkingDir: root,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  packages: "external",
  sourcemap: true,
  sourcesContent: false,
  logLevel: "warning",
};
await build({ ...options, entryPoints: ["src/main.ts"], outfile: "dist/portcullis.mjs" });
// The node agent's bundle: `portcullis node …` (bin/portcullis.mjs) loads only what the agent uses,
// not the panel's packages (Fastify, the database drivers, pino, …): about half its memory
// (docs/NODES.md, "Memory"; bench/node.ts measures it).
await build({ ...options, entryPoints: ["src/node-main.ts"], outfile: "dist/portcullis-node.mjs" });
await buildDashboardIfStale();
