// `portcullis users list|create|show|grant` through the same services as the API, on the app's own
// database and a core in memory: a created user is the API's user, the list has a header, a grant
// reaches the core and says synced, bad input is refused with the field named and nothing written.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../test/support/app.ts";
import { MemoryFleet } from "../../test/support/memory-core.ts";
import { createInbound, registerServer, templateFor } from "../../test/support/provisioning.ts";
import { request } from "../../test/support/templates.ts";
import { CliError } from "./cli-error.ts";
import { bytes, run } from "./users.ts";

const fleet = new MemoryFleet();
let t: TestApp;

before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "500" }, { cores: fleet });
});
after(async () => {
  await t.close();
});

async function cli(...args: string[]) {
  let output = "";
  let errors = "";
  const code = await run(args, {
    deps: t.deps,
    write: (text) => (output += text),
    writeError: (text) => (errors += text),
  });
  return { code, output, errors };
}

const idIn = (text: string) => /[0-9a-f-]{36}/.exec(text)?.[0] ?? assert.fail(`no id in ${text}`);

describe("portcullis users", () => {
  test("create makes the API's user, with its limit in GiB, reset and expiry", async () => {
    const made = await cli(
      "create",
      ...["--name", "cli alice", "--data-limit-gib", "1.5", "--reset", "month"],
      ...["--expire-at", "2030-01-31T00:00:00.000Z", "--comment", "from the shell"],
    );
    assert.equal(made.code, 0, made.errors);
    const id = idIn(made.output);
    assert.match(made.output, /^subscription: \/sub\/\S+$/m);
    const user = (await request(t, "GET", `/api/users/${id}`)).json();
    assert.deepEqual(
      [user.name, user.data_limit_bytes, user.data_limit_reset, user.expire_at, user.comment],
      ["cli alice", 1.5 * 1024 ** 3, "month", "2030-01-31T00:00:00.000Z", "from the shell"],
    );
  });

  test("bad input is refused with the field named, and no user is written", async () => {
    const before = (await request(t, "GET", "/api/users")).json().total;
    for (const [args, field] of [
      [["--name", "x", "--data-limit-gib", "lots"], /options\.data_limit_bytes/],
      [["--name", "x", "--reset", "hourly"], /options\.data_limit_reset/],
      [["--name", "x", "--expire-at", "tomorrow"], /options\.expire_at/],
      [["--data-limit-gib", "1"], /options\.name: is required/],
      [["--name", "x\u0000y"], /options\.name/],
    ] as const) {
      const result = await cli("create", ...args);
      assert.equal(result.code, 1, `${args.join(" ")}: ${result.output}`);
      assert.match(result.errors, field);
    }
    assert.equal((await request(t, "GET", "/api/users")).json().total, before);
    await assert.rejects(cli("create", "--name", "x", "--bogus"), (error: unknown) => {
      assert.ok(error instanceof CliError, "an unknown option is a usage error");
      assert.equal(error.exitCode, 2);
      return true;
    });
  });

  test("list has a header, one tab-separated line per user, and a footer; --search finds by name", async () => {
    const hostile = await cli("create", "--name", "cli bob\tline\u2028two");
    assert.equal(hostile.code, 1, "a tab or line separator in a name is refused, as by the API");
    await cli("create", "--name", "cli bob");
    const listed = await cli("list");
    assert.equal(listed.code, 0, listed.errors);
    const lines = listed.output.trimEnd().split("\n");
    assert.equal(lines[0], "NAME\tSTATUS\tUSED\tLIMIT\tEXPIRES\tID");
    const alice = lines.find((line) => line.startsWith("cli alice\t"));
    assert.match(alice ?? "", /^cli alice\tactive\t0 B\t1\.5 GiB\t2030-01-31T00:00:00\.000Z\t[0-9a-f-]{36}$/);
    const bob = lines.find((line) => line.startsWith("cli bob"));
    assert.equal(bob?.split("\t").length, 6);
    assert.match(lines.at(-1) ?? "", /^page 1: \d+ of \d+ users$/);
    const found = await cli("list", "--search", "alice");
    assert.deepEqual(
      found.output
        .trimEnd()
        .split("\n")
        .slice(1, -1)
        .map((line) => line.split("\t")[0]),
      ["cli alice"],
    );
    assert.equal((await cli("list", "--per-page", "0")).code, 1);
  });

  test("grant reaches the core and says synced; show lists the grant", async () => {
    const port = 21_000;
    const core = fleet.add(port, "v2ray");
    const server = await registerServer(t, port, { name: "cli core" });
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const inbound = await createInbound(t, server.id, { template_id: template.id, port: 21_001 });
    const id = idIn((await cli("create", "--name", "cli carol")).output);

    const granted = await cli("grant", id, "--server", server.id, "--inbound", inbound.id);
    assert.equal(granted.code, 0, granted.errors);
    assert.match(granted.output, /^sync: synced$/m);
    assert.equal(core.usersOf(inbound.tag)?.length, 1, "the core holds the user");

    const shown = await cli("show", id);
    assert.equal(shown.code, 0, shown.errors);
    assert.match(shown.output, /^name: +cli carol$/m);
    assert.match(shown.output, /^limit: +unlimited$/m);
    assert.match(shown.output, /^grants: +1$/m);
    assert.match(shown.output, /^cli core\t\S+\tsynced\t$/m);

    const again = await cli("grant", id, "--server", server.id, "--inbound", inbound.id);
    assert.equal(again.code, 1, "a second grant of the same inbound is refused");
    const missing = await cli("grant", id, "--server", server.id);
    assert.equal(missing.code, 1);
    assert.match(missing.errors, /--server and --inbound are required/);
    const badId = await cli("show", "not-a-uuid");
    assert.equal(badId.code, 1);
    assert.match(badId.errors, /arguments\.user_id/);
    const gone = await cli("show", "00000000-0000-4000-8000-000000000000");
    assert.equal(gone.code, 1);
    assert.equal((await cli("show")).code, 2, "show needs the user id");
  });

  test("bytes are shown in IEC units", () => {
    assert.deepEqual([0, 512, 1536, 1.5 * 1024 ** 3, 200 * 1024 ** 4].map(bytes), [
      "0 B",
      "512 B",
      "1.5 KiB",
      "1.5 GiB",
      "200 TiB",
    ]);
  });
});
