// The error catalogue and its documentation agree: every code is listed in docs/API.md's error table
// under its status, the table lists no code the catalogue lacks, and a class carries its own status.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import {
  AppError,
  CoreDownError,
  CoreNotFoundError,
  CoreTimeoutError,
  CoreUnavailableError,
  ERROR_CODES,
  NotFoundError,
} from "./errors.ts";

/** `| 409 | `conflict`, `tag_taken` (remarks) |` rows of the "## Errors" table: code → status. */
function documentedCodes(): Map<string, number> {
  const text = readFileSync(new URL("../../docs/API.md", import.meta.url), "utf8");
  const section = text.slice(text.indexOf("## Errors"), text.indexOf("\n## ", text.indexOf("## Errors")));
  const documented = new Map<string, number>();
  for (const [, status = "", codes = ""] of section.matchAll(/^\| (\d{3}) \| (.+) \|$/gm)) {
    for (const [, code = ""] of codes.replace(/\([^)]*\)/g, "").matchAll(/`([a-z0-9_]+)`/g)) {
      documented.set(code, Number(status));
    }
  }
  return documented;
}

test("every error code is documented in docs/API.md under its status, and no other code is", () => {
  const documented = documentedCodes();
  const catalogue = new Map(Object.entries(ERROR_CODES));
  const missing = [...catalogue].filter(([code, status]) => documented.get(code) !== status);
  assert.deepEqual(missing, [], "codes missing from the table (or under another status)");
  const unknown = [...documented.keys()].filter((code) => !catalogue.has(code));
  assert.deepEqual(unknown, [], "codes in the table that the catalogue lacks");
});

test("an error's status comes from the catalogue", () => {
  assert.equal(new AppError("route_not_found", "no route").status, 404);
  assert.equal(new CoreUnavailableError("down").status, 502);
  assert.equal(new CoreTimeoutError("slow").status, 504);
});

test("code reacts to classes: both ways of a core being down are CoreDownError; a core's 404 is not ours", () => {
  assert.ok(new CoreUnavailableError("down") instanceof CoreDownError);
  assert.ok(new CoreTimeoutError("slow") instanceof CoreDownError);
  assert.ok(!(new CoreNotFoundError("no such user") instanceof NotFoundError));
});
