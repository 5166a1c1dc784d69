#!/usr/bin/env node
// `npm pack` ships package-lock.json as npm-shrinkwrap.json (prepack writes it, postpack removes it).
// A lock inside a package is honoured when the package is installed (`npm i -g`, `npx`), so users get
// the tree CI tested, including the `overrides` that keep every package on Node 20 (package.json:
// overrides are read only from the project being installed, never from a dependency).
// If a pack fails between the two, the file stays behind (git ignores it) and npm would prefer it to
// package-lock.json: delete it, or run `npm pack` again.
import { copyFileSync, rmSync } from "node:fs";

const lock = new URL("../package-lock.json", import.meta.url);
const shrinkwrap = new URL("../npm-shrinkwrap.json", import.meta.url);
const [action] = process.argv.slice(2);
if (action === "write") copyFileSync(lock, shrinkwrap);
else if (action === "remove") rmSync(shrinkwrap, { force: true });
else {
  console.error("usage: node scripts/shrinkwrap.mjs write|remove");
  process.exit(2);
}
