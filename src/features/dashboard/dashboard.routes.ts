// Serves the web dashboard's built files (web/dist, made by `npm run build:web`) at the configured
// path. The dashboard is a client of the public API like any other: nothing here reads the database.
// Every answer carries a strict CSP: scripts and styles from this origin only (Mantine's one <style>
// element gets a per-response nonce), no other origin at all, and no framing.
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyReply } from "fastify";
import type { DashboardConfig } from "../../config/config.ts";
import type { App } from "../../lib/http.ts";

/** What index.html carries in its <base href> and nonce meta tag, replaced per response. */
const BASE_TAG = /<base href="[^"]*"\s*\/?>/;
const NONCE_PLACEHOLDER = "__CSP_NONCE__";

const TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".json": "application/json; charset=utf-8",
  ".txt": "text/plain; charset=utf-8",
};

export function contentSecurityPolicy(nonce: string): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    `style-src 'self' 'nonce-${nonce}'`,
    // QR codes and icons are drawn as inline SVG elements; data: only for images, never scripts.
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "manifest-src 'self'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** web/dist of the package this module belongs to (from the sources or the dist/ bundle). */
export function defaultDashboardDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, "package.json")) && dirname(dir) !== dir) dir = dirname(dir);
  return join(dir, "web", "dist");
}

type StaticFile = { body: Buffer; gzip: Buffer | undefined; type: string };

/** Built files, read once each: the dashboard is a few hundred KB, and a rebuild means a restart. */
class BuiltFiles {
  private readonly cache = new Map<string, StaticFile | undefined>();
  constructor(private readonly dir: string) {}

  get(name: string): StaticFile | undefined {
    if (!this.cache.has(name)) this.cache.set(name, this.read(name));
    return this.cache.get(name);
  }

  private read(name: string): StaticFile | undefined {
    const path = join(this.dir, name);
    const type = TYPES[name.slice(name.lastIndexOf("."))] ?? "application/octet-stream";
    try {
      const body = readFileSync(path);
      const gzip = existsSync(`${path}.gz`) ? readFileSync(`${path}.gz`) : undefined;
      return { body, gzip, type };
    } catch {
      return undefined;
    }
  }
}

/** Only names Vite writes: `assets/<name>.<ext>` or a top-level file; never `..` or a dotfile. */
const SAFE_NAME = /^(assets\/)?[A-Za-z0-9_-][A-Za-z0-9_.-]*\.[a-z0-9]+$/;

/** For the built files themselves: an SVG or script opened directly may load and run nothing. */
const ASSET_CSP = "default-src 'none'; frame-ancestors 'none'";

function securityHeaders(reply: FastifyReply, csp: string): FastifyReply {
  return reply
    .header("content-security-policy", csp)
    .header("x-content-type-options", "nosniff")
    .header("x-frame-options", "DENY")
    .header("referrer-policy", "no-referrer")
    .header("cross-origin-opener-policy", "same-origin");
}

export function dashboardRoutes(app: App, config: DashboardConfig): void {
  const mount = config.path;
  if (mount === undefined) return;
  const files = new BuiltFiles(config.dir ?? defaultDashboardDir());

  const sendIndex = (reply: FastifyReply) => {
    const index = files.get("index.html");
    const nonce = randomBytes(16).toString("base64");
    securityHeaders(reply, contentSecurityPolicy(nonce)).header("cache-control", "no-cache");
    if (index === undefined) {
      return reply
        .code(503)
        .type("text/plain; charset=utf-8")
        .send("The dashboard is not built: run `npm run build:web` (npm start does it when needed).\n");
    }
    const html = index.body
      .toString("utf8")
      .replace(BASE_TAG, `<base href="${mount}/" />`)
      .replaceAll(NONCE_PLACEHOLDER, nonce);
    return reply.type("text/html; charset=utf-8").send(html);
  };

  const route = { config: { auth: false }, schema: { hide: true } };
  app.get(mount, route, (_request, reply) => sendIndex(reply));
  app.get(`${mount}/*`, route, (request, reply) => {
    const name = (request.params as { "*": string })["*"];
    // Deep links (/dashboard/users/<id>) get the app, which routes in the browser.
    if (!SAFE_NAME.test(name) || name === "index.html") return sendIndex(reply);
    const file = files.get(name);
    if (file === undefined) {
      if (name.startsWith("assets/")) return reply.code(404).type("text/plain; charset=utf-8").send("");
      return sendIndex(reply);
    }
    securityHeaders(reply, ASSET_CSP).header(
      "cache-control",
      name.startsWith("assets/") ? "public, max-age=31536000, immutable" : "no-cache",
    );
    reply.header("vary", "accept-encoding").type(file.type);
    const acceptsGzip = /\bgzip\b/.test(String(request.headers["accept-encoding"] ?? ""));
    if (file.gzip !== undefined && acceptsGzip)
      return reply.header("content-encoding", "gzip").send(file.gzip);
    return reply.send(file.body);
  });
}
