// test ring: outer (starts Node processes of its own; scripts/run-tests.ts keeps it out of test:fast)
// State-changing CLI commands leave an audit entry like API writes do: the operating-system user as
// the actor (kind `cli`), the command as the action, its targets and outcome; never a password.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import { loadConfig } from "../config/config.ts";
import { createDeps } from "../deps.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const dataDir = mkdtempSync(join(tmpdir(), "portcullis-cli-audit-"));
after(() => rmSync(dataDir, { recursive: true, force: true }));

function cli(args: string[], input = ""): Promise<{ status: number; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ["bin/portcullis.mjs", ...args],
      { cwd: ROOT, env: { PATH: process.env.PATH ?? "", DATA_DIR: dataDir }, timeout: 60_000 },
      (error, _stdout, stderr) => {
        resolve({ status: error === null ? 0 : typeof error.code === "number" ? error.code : -1, stderr });
      },
    );
    child.stdin?.end(input);
  });
}

test("admin create, a failed reset, install-starters and migrate are each one audit entry with the CLI as actor", async () => {
  assert.equal(
    (await cli(["admin", "create", "--username", "cli-made", "--password-stdin"], "leakcheck-cli-pw\n"))
      .status,
    0,
  );
  const viewer = ["admin", "create", "--username", "cli-viewer", "--role", "viewer", "--password-stdin"];
  assert.equal((await cli(viewer, "leakcheck-cli-pw\n")).status, 0);
  const badRole = await cli(["admin", "create", "--username", "x", "--role", "root"], "");
  assert.equal(badRole.status, 2, "an unknown role is a usage error");
  assert.match(badRole.stderr, /--role is one of owner, operator, support, viewer/);
  assert.equal(
    (
      await cli(
        ["admin", "reset-password", "--username", "nobody-here", "--password-stdin"],
        "another-pass\n",
      )
    ).status,
    1,
  );
  assert.equal((await cli(["templates", "install-starters"])).status, 0);
  assert.equal((await cli(["migrate"])).status, 0);

  const deps = await createDeps(loadConfig({ DATA_DIR: dataDir }));
  try {
    const { items } = await deps.services.audit.list({}, 1, 50);
    const entries = items.reverse().filter((e) => e.actor.kind === "cli");
    assert.deepEqual(
      entries.map((e) => [e.action, e.outcome]),
      [
        ["cli.admin.create", "succeeded"],
        ["cli.admin.create", "succeeded"],
        ["cli.admin.reset_password", "failed"],
        ["cli.templates.install_starters", "succeeded"],
        ["cli.migrate", "succeeded"],
      ],
    );
    assert.deepEqual(entries[0]?.targets, { username: "cli-made", role: "owner" });
    assert.deepEqual(entries[1]?.targets, { username: "cli-viewer", role: "viewer" });
    const roles = new Map((await deps.services.admins.list()).map((a) => [a.username, a.role]));
    assert.deepEqual([roles.get("cli-made"), roles.get("cli-viewer")], ["owner", "viewer"]);
    assert.match(entries[0]?.actor.name ?? "", /\(pid \d+\)$/);
    assert.doesNotMatch(JSON.stringify(items), /leakcheck|another-pass/);
  } finally {
    await deps.close();
  }
});
