// test ring: outer (starts Node processes of its own; scripts/run-tests.ts keeps it out of test:fast)
// process.nextTick's feedback stays on its fast path after a full garbage collection at an idle
// moment, in the real entry point, because tick-object-maps.ts holds a tick object; without it (the
// control: plain Node) the same sequence sends every later nextTick through V8's runtime for good.
// Read with V8's own %DebugPrint of process.nextTick (its feedback slots' states), in child processes.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

// Once the command is done (or, with TICK_PROBE_LISTENING set, for a server that never is: once it
// listens, then exiting): 100 ticks, a full collection with no tick object alive, 100 ticks, then V8
// prints process.nextTick with its feedback vector.
const PROBE = `
let ran = false;
const ticks = (n) => new Promise((done) => { let left = n; for (let i = 0; i < n; i++) process.nextTick(() => { if (--left === 0) done(); }); });
const turn = () => new Promise((done) => setImmediate(done));
const probe = async () => {
  if (ran) return;
  ran = true;
  await ticks(100); await turn();
  globalThis.gc(); await turn();
  await ticks(100); await turn();
  process.stdout.write("FEEDBACK\\n");
  new Function("f", "%DebugPrint(f)")(process.nextTick);
  if (process.env.TICK_PROBE_LISTENING !== undefined) process.exit(0);
};
process.on("beforeExit", probe);
if (process.env.TICK_PROBE_LISTENING !== undefined) {
  const { Server } = require("node:net");
  const emit = Server.prototype.emit;
  Server.prototype.emit = function (event, ...args) {
    if (event === "listening") setImmediate(probe);
    return emit.call(this, event, ...args);
  };
}
`;

/** The states of nextTick's DefineKeyedOwnPropertyInLiteral slots after the probe, or undefined. */
function literalFeedback(args: string[], env: NodeJS.ProcessEnv = {}): string[] | undefined {
  const dir = mkdtempSync(join(tmpdir(), "portcullis-tick-"));
  try {
    const probe = join(dir, "probe.cjs");
    writeFileSync(probe, PROBE);
    // V8 prints through C stdio: into a pipe from spawnSync the tail is sometimes lost; a file keeps it.
    const output = join(dir, "stdout.txt");
    const fd = openSync(output, "w");
    let result: ReturnType<typeof spawnSync>;
    try {
      result = spawnSync(process.execPath, ["--allow-natives-syntax", "--expose-gc", "-r", probe, ...args], {
        cwd: ROOT,
        encoding: "utf8",
        timeout: 60_000,
        stdio: ["ignore", fd, "pipe"],
        env: { ...process.env, NODE_OPTIONS: "", ...env },
      });
    } finally {
      closeSync(fd);
    }
    assert.equal(result.status, 0, String(result.stderr));
    const stdout = readFileSync(output, "utf8");
    const printed = stdout.slice(stdout.indexOf("FEEDBACK"));
    const states = [...printed.matchAll(/DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((m) => m[1] as string);
    return states.length > 0 ? states : undefined; // a Node built without V8's object printer
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test("without a held tick object, one idle full collection sends nextTick's literal to the runtime for good", (t) => {
  const states = literalFeedback(["-e", ""]);
  if (states === undefined) return t.skip("this Node's V8 prints no feedback (no object printer)");
  assert.ok(states.includes("MEGAMORPHIC"), `expected the V8 behaviour this module works around: ${states}`);
});

test("the portcullis entry point keeps nextTick's literal monomorphic through the same collection", (t) => {
  const states = literalFeedback(["bin/portcullis.mjs", "--version"]);
  if (states === undefined) return t.skip("this Node's V8 prints no feedback (no object printer)");
  assert.ok(states.length >= 4, `the tick object literal's keys: ${states}`);
  assert.deepEqual(
    states.filter((state) => state !== "MONOMORPHIC"),
    [],
    `every key defined from one map: ${states}`,
  );
});

test("bench:sub's reference servers (bare Fastify, the raw node:http limit) hold one too, idle as they wait their turn", (t) => {
  const dir = mkdtempSync(join(tmpdir(), "portcullis-tick-bench-"));
  try {
    const body = join(dir, "body.txt");
    writeFileSync(body, "dmxlc3M6Ly8=");
    for (const server of ["bench/sub/fastify-server.ts", "bench/sub/limit-server.ts"]) {
      const env = { BENCH_BODY_FILE: body, HOST: "127.0.0.1", PORT: "0", TICK_PROBE_LISTENING: "1" };
      const states = literalFeedback(["--import", "tsx", server], env);
      if (states === undefined) return t.skip("this Node's V8 prints no feedback (no object printer)");
      assert.ok(states.length >= 4, `${server}: the tick object literal's keys: ${states}`);
      assert.deepEqual(
        states.filter((state) => state !== "MONOMORPHIC"),
        [],
        `${server}: every key defined from one map (a server measured on the slow path costs more than it should): ${states}`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
