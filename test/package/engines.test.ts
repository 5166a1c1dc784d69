// test ring: outer (starts Node processes of its own; scripts/run-tests.ts keeps it out of test:fast)
// `npm ci` on the Node running the suite installs nothing whose `engines` excludes it: every package
// npm would install supports this Node, as README.md promises (docs/DEPLOY.md says how the
// dependencies were made to agree). A dry run reads only the lock: no download, node_modules untouched.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

test(`npm ci warns no EBADENGINE on Node ${process.versions.node}`, async () => {
  assert.equal(
    existsSync(join(ROOT, "npm-shrinkwrap.json")),
    false,
    "a left-over shrinkwrap would replace the lock",
  );
  // Without the npm_* variables of the `npm test` around us.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
  const output = await new Promise<string>((resolve, reject) => {
    execFile(
      "npm",
      ["ci", "--dry-run", "--no-audit", "--no-fund"],
      { cwd: ROOT, env, timeout: 120_000 },
      (error, stdout, stderr) =>
        error === null ? resolve(`${stdout}${stderr}`) : reject(new Error(`${error.message}\n${stderr}`)),
    );
  });
  assert.doesNotMatch(output, /EBADENGINE/, output);
});
