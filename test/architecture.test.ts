// The dependency rules of docs/ARCHITECTURE.md as a test, so they stay true as the code grows. The
// rules live in test/support/architecture.ts as one function over a tree: here it runs on the project
// (every rule kept) and on test/fixtures/architecture/ (every rule broken by its planted violation, so
// a rule that silently stopped matching would fail here too).
import assert from "node:assert/strict";
import { join, resolve } from "node:path";
import { describe, test } from "node:test";
import { checkArchitecture, POLICY, readTree } from "./support/architecture.ts";

const ROOT = resolve(import.meta.dirname, "..");
const FIXTURE = join(import.meta.dirname, "fixtures", "architecture");

/** Each rule, and what it must report on the fixture tree (a part of one of its lines). */
const PLANTED: Record<string, string[]> = {
  "Kysely only in *.repository.ts and src/db/": ["src/features/users/users.service.ts:1 imports kysely"],
  "protobuf, gRPC and src/gen/ only in src/cores/ and src/lobby/": ["src/links/proto.ts:1 imports @bufbuild"],
  "layers: an import between parts of src/ points down a tier of layerTiers, never sideways": [
    "src/cores/reads-db.ts:1 imports src/db/connection.ts: sideways within a tier",
    "src/lib/uses-links.ts:1 imports src/links/build.ts: up the tiers",
    "src/features/users/calls-deps.ts:1 imports src/deps.ts: up the tiers",
    "src/plugins/plugin.ts is in no tier",
  ],
  "src/ imports nothing outside src/ but package.json (not web/, test/, bench/, scripts/)": [
    "src/lib/web-types.ts:1 imports web/src/page.tsx",
  ],
  "web/src/ imports nothing outside web/src/ (its API types are generated into web/src/api/schema.d.ts)": [
    "web/src/page.tsx:1 imports src/app.ts",
  ],
  "no dynamic loads (template-string or computed import(), require, createRequire) but those allowed": [
    "src/jobs/loader.ts:3: import() is not in dynamicLoads",
    "src/jobs/cjs.ts:1: createRequire is not in dynamicLoads",
    "src/jobs/cjs.ts:5: require is not in dynamicLoads",
    "web/src/lazy.tsx:1: import() is not in dynamicLoads",
    "db/connection.ts: createRequire is in dynamicLoads but not used",
  ],
  "no barrel files: no module of ours is re-exported": ["src/lib/barrel.ts re-exports"],
  "process.env is read only in src/config/": ["src/lib/env.ts reads process.env"],
  "no import cycles between files": ["src/lib/cycle-a.ts -> src/lib/cycle-b.ts -> src/lib/cycle-a.ts"],
  // A policy check: broken by a policy that allows an upward edge (below), not by the tree.
  "features read top-down: every allowed edge points down featureOrder": [],
  "feature -> feature imports are the ones featureEdges allows": [
    "users -> subscriptions is not in featureEdges (src/features/users/users.service.ts:2",
    "subscriptions -> access is in featureEdges but nothing imports that way",
  ],
  "enclosed parts (the subscription engine) import only themselves, the folders and the packages they list": [
    "src/features/subscriptions/engine/store.ts:2 imports src/features/subscriptions/subscriptions.routes.ts: outside",
    "src/features/subscriptions/engine/store.ts:3 imports src/features/subscriptions/formats.ts: outside",
    "src/features/subscriptions/engine/store.ts:4 imports src/features/inbounds/link-params.ts: outside",
    "src/features/subscriptions/engine/store.ts:5 imports fastify: outside",
  ],
};

describe("architecture", () => {
  test("the scanner sees the whole tree (a broken pattern would make every rule pass)", () => {
    const { files, imports } = readTree(ROOT);
    assert.ok(
      files.filter((file) => file.startsWith("src/")).length > 100,
      `only ${files.length} files read`,
    );
    assert.ok(files.filter((file) => file.startsWith("web/src/")).length > 20, "web/src/ is read");
    assert.ok(imports.some((i) => i.to === "kysely" && i.from.startsWith("src/db/")));
    assert.ok(
      imports.some((i) => i.from === "src/cli/commands.ts" && i.to === "src/cli/serve.ts"),
      "dynamic import",
    );
  });

  const violations = checkArchitecture(ROOT);
  for (const [rule, broken] of Object.entries(violations)) {
    test(rule, () => {
      assert.deepEqual(broken, [], `${broken.length} violation(s):\n${broken.join("\n")}`);
    });
  }
});

describe("architecture rules fail on their planted violations (test/fixtures/architecture/)", () => {
  const planted = checkArchitecture(FIXTURE);

  test("every rule has a planted violation listed here", () => {
    assert.deepEqual(Object.keys(planted).sort(), Object.keys(PLANTED).sort());
  });

  for (const [rule, expected] of Object.entries(PLANTED)) {
    if (expected.length === 0) continue;
    test(`fails: ${rule}`, () => {
      const found = planted[rule] ?? [];
      for (const part of expected) {
        assert.ok(
          found.some((line) => line.includes(part)),
          `expected "${part}" among:\n${found.join("\n")}`,
        );
      }
    });
  }

  test("the engine's own files, lib/, node: builtins and pino are allowed it: only the four planted imports fail", () => {
    const found =
      planted[
        "enclosed parts (the subscription engine) import only themselves, the folders and the packages they list"
      ] ?? [];
    assert.equal(found.length, 4, found.join("\n"));
  });

  test("fails: an allowed feature edge that points up featureOrder", () => {
    const policy = { ...POLICY, featureEdges: [...POLICY.featureEdges, "users -> subscriptions"] };
    const found = checkArchitecture(FIXTURE, policy)[
      "features read top-down: every allowed edge points down featureOrder"
    ];
    assert.deepEqual(found, ["users -> subscriptions does not point down featureOrder"]);
  });

  test("an allowed dynamic load is no longer reported, and only that one", () => {
    const rule =
      "no dynamic loads (template-string or computed import(), require, createRequire) but those allowed";
    const policy = { ...POLICY, dynamicLoads: { "jobs/cjs.ts: createRequire": "a planted exception" } };
    const found = checkArchitecture(FIXTURE, policy)[rule] ?? [];
    assert.ok(!found.some((line) => line.includes("createRequire")), found.join("\n"));
    assert.ok(found.some((line) => line.includes("src/jobs/cjs.ts:5: require")));
  });
});
