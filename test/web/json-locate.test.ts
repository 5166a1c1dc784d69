// The template editor puts each validation error on its line: the JSON-path locator the dashboard
// uses (web/src/json/locate.ts), checked against paths in the API's own error format.
import assert from "node:assert/strict";
import { test } from "node:test";
import { locateError, locatePaths, syntaxError } from "../../web/src/json/locate.ts";

const TEXT = `{
  "protocol": "vless",
  "settings": { "clients": [ { "id": "x" } ], "decryption": "none" },
  "streamSettings": {
    "network": "ws",
    "wsSettings": { "path": "{{ws_path}}", "headers": { "Host": "a\\"b" } }
  }
}`;

test("an error path of the API lands on the line of its key", () => {
  const positions = locatePaths(TEXT);
  assert.equal(locateError(positions, "config.protocol")?.line, 2);
  assert.equal(locateError(positions, "config.settings.clients[0]")?.line, 3);
  assert.equal(locateError(positions, "config.streamSettings.wsSettings.path")?.line, 6);
  assert.equal(locateError(positions, "config.streamSettings.wsSettings.headers.Host")?.line, 6);
  assert.equal(locateError(positions, "xray: streamSettings.network")?.line, 5, "a flavor prefix is dropped");
});

test("a path that is not in the text falls back to its nearest parent", () => {
  const positions = locatePaths(TEXT);
  assert.equal(locateError(positions, "config.streamSettings.tlsSettings.certificates")?.line, 4);
  assert.equal(locateError(positions, "config.settings.clients[3].id")?.line, 3);
});

test("a syntax error names its line; valid JSON has none", () => {
  assert.equal(syntaxError(TEXT), undefined);
  const cases: [string, number][] = [
    ['{\n  "a": 1,\n  "b": ,\n}', 3],
    ['{\n  "a": [1, 2\n  "b": 3\n}', 3],
    ['{\n  "a": tru\n}', 2],
    ['{\n  "a": 1\n}\n}', 4],
    ['{\n  "a": "never closed\n}', 2],
  ];
  for (const [text, line] of cases) {
    const error = syntaxError(text);
    assert.ok(error !== undefined, text);
    assert.equal(error.position?.line, line, text);
  }
});
