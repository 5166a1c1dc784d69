// The dns-01 hook contract as seen from Portcullis: arguments, and failures that say what went wrong.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { dnsChallengeName, runDnsHook } from "./dns01-hook.ts";

const node = process.execPath;

describe("dns-01 hook", () => {
  test("it receives action, fqdn and value after its own arguments", async () => {
    const script =
      "if (process.argv.slice(1).join(' ') !== '--zone set _acme-challenge.a.test v4lue') process.exit(9)";
    await runDnsHook(
      { command: node, args: ["-e", script, "--", "--zone"] },
      "set",
      "_acme-challenge.a.test",
      "v4lue",
    );
  });

  test("the TXT name drops a wildcard label", () => {
    assert.equal(dnsChallengeName("a.test"), "_acme-challenge.a.test");
    assert.equal(dnsChallengeName("*.a.test"), "_acme-challenge.a.test");
  });

  test("a hook that hangs is killed at its timeout", async () => {
    const hook = { command: node, args: ["-e", "setInterval(() => {}, 1000)"], timeoutMs: 200 };
    await assert.rejects(
      runDnsHook(hook, "set", "_acme-challenge.a.test", "v"),
      /set _acme-challenge\.a\.test timed out after 200 ms/,
    );
  });

  test("a missing command says so", async () => {
    const hook = { command: "/nonexistent/portcullis-dns-hook" };
    await assert.rejects(
      runDnsHook(hook, "clear", "_acme-challenge.a.test", "v"),
      /clear _acme-challenge\.a\.test command not found/,
    );
  });

  test("the caller's signal stops a running hook", async () => {
    const controller = new AbortController();
    const hook = { command: node, args: ["-e", "setInterval(() => {}, 1000)"] };
    const running = runDnsHook(hook, "set", "_acme-challenge.a.test", "v", controller.signal);
    controller.abort();
    await assert.rejects(running, /cancelled or ran out of time/);
  });
});
