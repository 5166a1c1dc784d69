// The one guard for tests that run a real binary (v2ray, ss-local, trojan, pebble, openssl, protoc):
// without it such a test skips and says what is missing, rather than failing in a hook. A test file
// that calls requires() belongs to the outer ring: `npm run test:fast` (the inner ring) leaves it out
// (scripts/run-tests.ts).
//
//   const needs = requires("v2ray", "ss-local");
//   needs.before(async () => { core = await startV2rayServer(stack.add); });  // runs only when present
//   describe("granting access", needs, () => { … });                         // skipped when absent
import { spawnSync } from "node:child_process";
import { after, before } from "node:test";

export type Requirement = {
  /** A node:test option: the reason to skip, or false. */
  skip: string | false;
  /** node:test's before/after, run only when every binary is there. */
  before(fn: () => Promise<void> | void): void;
  after(fn: () => Promise<void> | void): void;
};

const found = new Map<string, boolean>();

function isInstalled(binary: string): boolean {
  let isThere = found.get(binary);
  if (isThere === undefined) {
    isThere = spawnSync("sh", ["-c", `command -v ${binary}`]).status === 0;
    found.set(binary, isThere);
  }
  return isThere;
}

export function requires(...binaries: string[]): Requirement {
  const missing = binaries.filter((binary) => !isInstalled(binary));
  const skip = missing.length > 0 ? `needs ${missing.join(", ")} (not installed)` : false;
  return {
    skip,
    before: (fn) => before(async () => (skip === false ? fn() : undefined)),
    after: (fn) => after(async () => (skip === false ? fn() : undefined)),
  };
}
