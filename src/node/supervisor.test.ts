// The agent's core supervisor against the real v2ray: the core starts from the base document with
// its API on 127.0.0.1 only, answers, is restarted after being killed, and reports what runs.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { waitFor } from "../../test/support/poll.ts";
import { freePort } from "../../test/support/ports.ts";
import { requires } from "../../test/support/requires.ts";
import { CleanupStack, tempDir } from "../../test/support/v2ray.ts";
import { coreConfig, DEFAULT_BASE_DOCUMENT, parseBaseDocument } from "../cores/node-base-config.ts";
import { CORE_RAW_LINE_MAX_BYTES } from "./bounded-lines.ts";
import { CoreSupervisor } from "./supervisor.ts";

const needs = requires("v2ray");
const stack = new CleanupStack();
needs.after(() => stack.run());

describe("the base document", () => {
  test("cannot move the API, open it to proxy traffic, or add inbounds", () => {
    const refused = [
      { inbounds: [] },
      { api: { tag: "x" } },
      { log: { access: "/tmp/x" } },
      { routing: { rules: [{ type: "field", inboundTag: ["vless-in"], outboundTag: "api" }] } },
      { outbounds: [{ tag: "api", protocol: "freedom" }] },
      { outbounds: [] },
      "[1,2]",
      "{not json",
    ];
    for (const document of refused)
      assert.equal(parseBaseDocument(document).ok, false, JSON.stringify(document));
    assert.equal(parseBaseDocument(DEFAULT_BASE_DOCUMENT).ok, true);
  });

  test("the written config keeps the API on loopback, first in routing, with user counters", () => {
    const config = coreConfig(
      { routing: { rules: [{ type: "field", ip: ["10.0.0.0/8"], outboundTag: "blocked" }] } },
      { port: 12345 },
    ) as {
      inbounds: { listen: string }[];
      routing: { rules: { outboundTag: string }[] };
      policy: { levels: Record<string, { statsUserUplink: boolean }> };
    };
    assert.deepEqual(
      config.inbounds.map((inbound) => inbound.listen),
      ["127.0.0.1"],
    );
    assert.equal(config.routing.rules[0]?.outboundTag, "api");
    assert.equal(config.policy.levels["0"]?.statsUserUplink, true);
  });
});

describe("the core supervisor", needs, () => {
  test("starts the core, restarts it after it is killed, and reports flavor, version, restarts", async () => {
    const dir = tempDir(stack.add);
    const apiPort = await freePort();
    const supervisor = new CoreSupervisor({
      binary: "v2ray",
      dir,
      apiPort,
      backoff: { initialMs: 50, maxMs: 1000 },
    });
    stack.add(() => supervisor.stop());
    let readies = 0;
    supervisor.on("ready", () => {
      readies += 1;
    });
    await supervisor.start(DEFAULT_BASE_DOCUMENT);
    await waitFor(() => readies === 1, { what: "core ready" });
    const config = JSON.parse(readFileSync(`${dir}/core-config.json`, "utf8"));
    assert.equal(config.inbounds[0].listen, "127.0.0.1");
    const first = supervisor.report();
    assert.equal(first.flavor, "v2ray");
    assert.match(first.version ?? "", /^4\.\d+/);
    assert.equal(first.running, true);
    assert.equal(first.restarts, 0);
    process.kill(first.pid ?? 0, "SIGKILL");
    await waitFor(() => readies === 2, { what: "core restarted", timeoutMs: 5000 });
    const second = supervisor.report();
    assert.equal(second.restarts, 1);
    assert.notEqual(second.pid, first.pid);
    assert.equal(second.last_exit, "signal SIGKILL");
    assert.ok(supervisor.recentLines().some((line) => /started/.test(line)));
  });
});

describe("the core's output in the supervisor", () => {
  test("a 32 MB line and a flood of 100,000 lines: the ring keeps 200 bounded lines", async () => {
    const dir = tempDir(stack.add);
    // A stand-in core (sh): one line of 32 MB with no word break, a flood, then a last line.
    const script = [
      "head -c 33554432 /dev/zero | tr '\\0' x",
      "echo",
      "seq 1 100000 | sed 's/^/flood line /'",
      "echo last line",
      "exec sleep 60",
    ].join("; ");
    const supervisor = new CoreSupervisor({
      binary: "sh",
      args: ["-c", script],
      dir,
      apiPort: await freePort(),
      backoff: { initialMs: 60_000, maxMs: 60_000 },
    });
    stack.add(() => supervisor.stop());
    const seen: string[] = [];
    supervisor.on("line", (line) => {
      if (seen.length < 3) seen.push(line);
    });
    await supervisor.start(DEFAULT_BASE_DOCUMENT);
    await waitFor(() => supervisor.recentLines().at(-1) === "last line", {
      what: "the stand-in core's last line",
      timeoutMs: 60_000,
    });
    // The huge line went to the listeners cut to the bound: no word fits, so only the mark is left.
    assert.equal(seen[0], "…");
    assert.equal(seen[1], "flood line 1");
    const ring = supervisor.recentLines();
    assert.equal(ring.length, 200);
    assert.equal(ring[0], "flood line 99802");
    assert.ok(ring.every((line) => line.length <= CORE_RAW_LINE_MAX_BYTES + 1));
  });
});
