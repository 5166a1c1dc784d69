// The service's Node.js options and malloc settings are written in four places: `npm start`, the
// Docker image, the systemd unit and the subscription benchmark's service (which measures what
// `npm start` runs). They are chosen by measurement (docs/ARCHITECTURE.md, Memory; docs/BENCHMARKS.md):
// one place changed alone would ship, or measure, something else.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { startArgs } from "../bench/sub/service.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const read = (path: string) => readFileSync(`${ROOT}${path}`, "utf8");

const NODE_OPTIONS = ["--expose-gc", "--max-semi-space-size=16"];
const MALLOC = [
  "MALLOC_ARENA_MAX=1",
  "MALLOC_MMAP_THRESHOLD_=131072",
  "MALLOC_TRIM_THRESHOLD_=131072",
  "GLIBC_TUNABLES=glibc.malloc.hugetlb=1",
];

test("npm start, the Dockerfile, the systemd unit and bench:sub's service run node with the same options", () => {
  const start = (JSON.parse(read("package.json")) as { scripts: Record<string, string> }).scripts.start ?? "";
  const dockerfile = read("deploy/Dockerfile");
  const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(dockerfile)?.[1];
  assert.ok(entrypoint !== undefined, "the Dockerfile's ENTRYPOINT");
  const unit = read("deploy/portcullis.service");
  const execStart = /^ExecStart=(.*)$/m.exec(unit)?.[1] ?? "";
  const unitNodeOptions = /^Environment="NODE_OPTIONS=(.*)"$/m.exec(unit)?.[1] ?? "";
  const bench = startArgs("bundle.mjs");
  for (const option of NODE_OPTIONS) {
    assert.ok(start.split(" ").includes(option), `npm start: ${option}`);
    assert.ok((JSON.parse(entrypoint) as string[]).includes(option), `Dockerfile ENTRYPOINT: ${option}`);
    assert.ok(
      [...execStart.split(" "), ...unitNodeOptions.split(" ")].includes(option),
      `systemd unit (ExecStart or NODE_OPTIONS): ${option}`,
    );
    assert.ok(bench.includes(option), `bench:sub's service: ${option}`);
  }
});

test("and with the same malloc settings", () => {
  const start = (JSON.parse(read("package.json")) as { scripts: Record<string, string> }).scripts.start ?? "";
  const dockerfile = read("deploy/Dockerfile");
  const unit = read("deploy/portcullis.service");
  const bench = read("bench/sub/service.ts");
  for (const setting of MALLOC) {
    const name = setting.slice(0, setting.indexOf("="));
    const rest = setting.slice(name.length + 1);
    assert.ok(start.split(" ").includes(setting), `npm start: ${setting}`);
    assert.ok(
      new RegExp(`^\\s+${name}=${escapeRegExp(rest)}( \\\\)?$`, "m").test(dockerfile),
      `Dockerfile ENV: ${setting}`,
    );
    assert.ok(
      new RegExp(`^Environment=(.* )?${escapeRegExp(setting)}( .*)?$`, "m").test(unit),
      `systemd unit: ${setting}`,
    );
    assert.ok(bench.includes(`${name}: "${rest}"`), `bench:sub's service: ${setting}`);
  }
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
