// The /sub body: standard base64 with padding of the links joined by "\n" (share-links.md §5).
import assert from "node:assert/strict";
import { test } from "node:test";
import { EMPTY_SUBSCRIPTION_LINE, encodeSubscription } from "./subscription.ts";

test("links are joined by \\n and encoded as standard base64 with padding", () => {
  const links = [
    "vless://a@h.example:1?encryption=none#x",
    "ss://YWVzLTEyOC1nY206dGVzdA@h.example:2#%F0%9F%9A%80",
  ];
  const body = encodeSubscription(links);
  assert.equal(body, Buffer.from(`${links[0]}\n${links[1]}`).toString("base64"));
  assert.match(body, /^[A-Za-z0-9+/]+={0,2}$/);
  assert.equal(body.length % 4, 0);
  assert.deepEqual(Buffer.from(body, "base64").toString("utf8").split("\n"), links);
});

test("the standard alphabet is used even where URL-safe would differ (mihomo reads only standard)", () => {
  assert.equal(encodeSubscription(["?>"]), "Pz4=");
  assert.equal(encodeSubscription(["??"]), "Pz8=");
  assert.equal(encodeSubscription(["\u00fb\u00ff"]), "w7vDvw==");
});

test("an empty subscription is one base64-encoded # comment line", () => {
  const decoded = Buffer.from(encodeSubscription([]), "base64").toString("utf8");
  assert.equal(decoded, EMPTY_SUBSCRIPTION_LINE);
  assert.match(decoded, /^#[^\n]*$/);
});

test("a link with a line break is refused rather than split into two entries", () => {
  assert.throws(() => encodeSubscription(["vless://a@h:1\nss://b@h:2"]));
});
