#!/usr/bin/env node
// The `portcullis` command. Installed from the npm package it runs the bundle (dist/portcullis.mjs,
// built when the package is packed); `portcullis node …` runs the node agent's own, smaller bundle
// (dist/portcullis-node.mjs: only what the agent loads). In a checkout it runs the TypeScript sources
// through tsx, so `npx portcullis` runs what you just edited (`npm start` builds and runs the bundle).
import { existsSync } from "node:fs";

const isNode = process.argv[2] === "node";
const sources = new URL(isNode ? "../src/node-main.ts" : "../src/main.ts", import.meta.url);
if (existsSync(sources)) {
  const { register } = await import("tsx/esm/api");
  register();
  await import(sources.href);
} else {
  process.setSourceMapsEnabled(true);
  await import(isNode ? "../dist/portcullis-node.mjs" : "../dist/portcullis.mjs");
}
