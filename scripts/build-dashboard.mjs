// Builds the web dashboard (web/ → web/dist) with Vite when its inputs changed since the last
// build, writes a .gz beside each text file for the service to send, and reports the initial
// JavaScript (what index.html loads before the first paint) against its 300 KB gzipped budget.
// `npm run build:web` forces a build; scripts/build.mjs (npm start) calls buildDashboardIfStale().
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const root = fileURLToPath(new URL("..", import.meta.url));
const web = join(root, "web");
const out = join(web, "dist");
const stampFile = join(out, ".build-stamp");
export const INITIAL_JS_BUDGET_BYTES = 300 * 1024;

function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : [path];
  });
}

/** A hash of everything the build reads: the sources, the config, and the locked dependencies. */
function inputsHash() {
  const inputs = [
    ...files(join(web, "src")),
    ...files(join(web, "public")),
    join(web, "index.html"),
    join(web, "vite.config.ts"),
    join(root, "package-lock.json"),
  ].sort();
  const hash = createHash("sha256");
  for (const path of inputs)
    hash.update(relative(root, path)).update("\0").update(readFileSync(path)).update("\0");
  return hash.digest("hex");
}

/** Sizes of what index.html loads itself: its module script, what that imports statically, its CSS. */
export function initialSize(dir = out) {
  const html = readFileSync(join(dir, "index.html"), "utf8");
  const refs = [...html.matchAll(/(?:src|href)="\.\/(assets\/[^"]+\.(js|css))"/g)];
  const size = { js: 0, jsGzip: 0, css: 0, cssGzip: 0, files: [] };
  for (const [, name, ext] of refs) {
    const body = readFileSync(join(dir, name));
    const gzip = gzipSync(body, { level: 9 }).length;
    size[ext] += body.length;
    size[`${ext}Gzip`] += gzip;
    size.files.push(name);
  }
  return size;
}

function compress(dir) {
  for (const path of files(dir)) {
    if (/\.(js|css|html|svg|json)$/.test(path))
      writeFileSync(`${path}.gz`, gzipSync(readFileSync(path), { level: 9 }));
  }
}

const kb = (bytes) => `${(bytes / 1024).toFixed(1)} KB`;

export async function buildDashboard({ hash = inputsHash() } = {}) {
  const started = Date.now();
  const { build } = await import("vite");
  await build({ configFile: join(web, "vite.config.ts"), logLevel: "warn" });
  compress(out);
  writeFileSync(stampFile, `${hash}\n`);
  const size = initialSize();
  const line =
    `dashboard built in ${((Date.now() - started) / 1000).toFixed(1)} s: initial JS ${kb(size.jsGzip)} gzipped ` +
    `(${kb(size.js)} raw; budget ${kb(INITIAL_JS_BUDGET_BYTES)}), CSS ${kb(size.cssGzip)} gzipped`;
  // stderr: `npm pack --json` runs the build in prepack and its stdout must stay JSON.
  console.error(line);
  if (size.jsGzip > INITIAL_JS_BUDGET_BYTES) {
    throw new Error(`the dashboard's initial JavaScript is over its budget: ${line}`);
  }
  return size;
}

export async function buildDashboardIfStale() {
  const hash = inputsHash();
  const built = existsSync(stampFile) ? readFileSync(stampFile, "utf8").trim() : "";
  if (built === hash && existsSync(join(out, "index.html"))) return undefined;
  return buildDashboard({ hash });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await (process.argv.includes("--if-stale") ? buildDashboardIfStale() : buildDashboard());
}
