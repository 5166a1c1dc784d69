#!/usr/bin/env node
// `npm run fix-lock`: the npm registry mirror on our machines answers 404 for some platform builds of
// biome and buf (android, darwin, win32, musl), so npm leaves them out of package-lock.json, and then
// `npm ci` refuses the lock as "out of sync". This adds the missing optional entries with their
// os/cpu/libc so npm ci skips them on this platform exactly as it would with a complete lock.
// Run it after any `npm install` that rewrites package-lock.json.
import { readFileSync, writeFileSync } from "node:fs";

const path = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(path, "utf8"));
const PLATFORM = /-(android|darwin|linux|win32)-(arm64|x64|armv7|ia32)(-musl)?$/;
let added = 0;
for (const meta of Object.values(lock.packages)) {
  for (const [name, version] of Object.entries(meta.optionalDependencies ?? {})) {
    const key = `node_modules/${name}`;
    const match = PLATFORM.exec(name);
    if (key in lock.packages || match === null) continue;
    const [, os, cpu, musl] = match;
    lock.packages[key] = {
      version,
      ...(meta.dev ? { dev: true } : {}),
      optional: true,
      os: [os],
      cpu: [cpu === "armv7" ? "arm" : cpu],
      ...(musl ? { libc: ["musl"] } : {}),
    };
    added++;
  }
}
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`package-lock.json: added ${added} missing optional platform entries`);
