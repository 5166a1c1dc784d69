#!/usr/bin/env node
// The `portcullis` command. Installed from the npm package it runs the bundle (dist/portcullis.mjs,
// built when the package is packed). In a checkout it runs the TypeScript sources through tsx, so
// `npx portcullis` runs what you just edited (`npm start` builds and runs the bundle).
import { existsSync } from "node:fs";

const sources = new URL("../src/main.ts", import.meta.url);
if (existsSync(sources)) {
  const { register } = await import("tsx/esm/api");
  register();
  await import(sources.href);
} else {
  process.setSourceMapsEnabled(true);
  await import("../dist/portcullis.mjs");
}
