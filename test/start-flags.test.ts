// The service's Node.js options and malloc settings are written in four places: `npm start`, the
// Docker image, the systemd unit and the subscription benchmark's service (which measures what
// `npm start` runs). They are chosen by measurement (docs/SUBSCRIPTIONS.md, Memory; docs/benchmarks/HISTORY.md):
// one place changed alone would ship, or measure, something else.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { MALLOC_ENV, startArgs } from "../bench/sub/service.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const read = (path: string) => readFileSync(`${ROOT}${path}`, "utf8");

const NODE_OPTIONS = [
  "--expose-gc",
  "--max-semi-space-size=16",
  "--heap-growing-percent=50",
  "--max-inlined-bytecode-size=920",
  "--max-inlined-bytecode-size-cumulative=2760",
];
const MALLOC = [
  "MALLOC_ARENA_MAX=1",
  "MALLOC_MMAP_THRESHOLD_=131072",
  "MALLOC_TRIM_THRESHOLD_=131072",
  "GLIBC_TUNABLES=glibc.malloc.hugetlb=1",
];

/** Each place's words: npm start's command, the Dockerfile's ENTRYPOINT and ENV, the unit's settings. */
const start = (
  (JSON.parse(read("package.json")) as { scripts: Record<string, string> }).scripts.start ?? ""
).split(" ");
const dockerfile = read("deploy/Dockerfile");
// The panel's stage is the file's last (the default target); the node agent's stage comes before it.
const entrypoint = JSON.parse(
  [...dockerfile.matchAll(/^ENTRYPOINT (\[.*\])$/gm)].at(-1)?.[1] ?? "[]",
) as string[];
// ENV's continuation lines: `    NAME=value \`
const dockerEnv = [...dockerfile.matchAll(/^\s+(\w+=\S+)(?: \\)?$/gm)].map((m) => m[1] as string);
const unit = read("deploy/portcullis.service");
const execStart = (/^ExecStart=(.*)$/m.exec(unit)?.[1] ?? "").split(" ");
const unitEnv = [...unit.matchAll(/^Environment="?(.*?)"?$/gm)].flatMap((m) => (m[1] as string).split(" "));
const unitNodeOptions = (/^Environment="NODE_OPTIONS=(.*)"$/m.exec(unit)?.[1] ?? "").split(" ");
const benchEnv = Object.entries(MALLOC_ENV).map(([name, value]) => `${name}=${value}`);

test("npm start, the Dockerfile, the systemd unit and bench:sub's service run node with the same options", () => {
  assert.ok(entrypoint.length > 0, "the Dockerfile's ENTRYPOINT");
  const bench = startArgs("bundle.mjs");
  const unitOptions = [...execStart, ...unitNodeOptions];
  for (const option of NODE_OPTIONS) {
    assert.ok(start.includes(option), `npm start: ${option}`);
    assert.ok(entrypoint.includes(option), `Dockerfile ENTRYPOINT: ${option}`);
    assert.ok(unitOptions.includes(option), `systemd unit (ExecStart or NODE_OPTIONS): ${option}`);
    assert.ok(bench.includes(option), `bench:sub's service: ${option}`);
  }
});

test("and with the same malloc settings", () => {
  for (const setting of MALLOC) {
    assert.ok(start.includes(setting), `npm start: ${setting}`);
    assert.ok(dockerEnv.includes(setting), `Dockerfile ENV: ${setting}`);
    assert.ok(unitEnv.includes(setting), `systemd unit: ${setting}`);
    assert.ok(benchEnv.includes(setting), `bench:sub's service: ${setting}`);
  }
  assert.deepEqual(benchEnv.sort(), [...MALLOC].sort(), "bench:sub's service sets these and no other");
});
