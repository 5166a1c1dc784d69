#!/usr/bin/env node
// The installed CLI: loads the TypeScript sources through tsx, so the same code runs on Node 20 and 24.
import { register } from "tsx/esm/api";

register();
await import("../src/main.ts");
