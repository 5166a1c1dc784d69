// The IP-limit decision without I/O: windows, keys, the allow-list, warn → block → release, growing
// periods and forgetting them.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  addressKey,
  decideFairUse,
  EMPTY_ALLOW,
  type FairUseOptions,
  type FairUseState,
  FRESH_STATE,
  isAddressOrCidr,
  parseAllowList,
  parseIpv6Groups,
  type Sighting,
} from "./decision.ts";

const MIN = 60_000;
const NOW = Date.UTC(2026, 11, 2, 12, 0, 0);
const OPTIONS: FairUseOptions = {
  windowMs: 10 * MIN,
  tolerance24: false,
  allow: EMPTY_ALLOW,
  blockPeriodsMs: [10 * MIN, 60 * MIN, 24 * 60 * MIN],
  forgetMs: 7 * 24 * 60 * MIN,
  warnGraceMs: 0,
};
const seen = (ip: string, minutesAgo = 1): Sighting => ({ ip, lastSeenMs: NOW - minutesAgo * MIN });
const three = [seen("127.0.0.2"), seen("127.0.0.3"), seen("127.0.0.4")];

describe("address keys", () => {
  test("IPv4 per address, per /24 with the tolerance; IPv4-mapped IPv6 is IPv4", () => {
    assert.equal(addressKey("203.0.113.7", false, EMPTY_ALLOW), "203.0.113.7");
    assert.equal(addressKey("203.0.113.7", true, EMPTY_ALLOW), "203.0.113.0/24");
    assert.equal(addressKey("::ffff:203.0.113.7", false, EMPTY_ALLOW), "203.0.113.7");
    assert.equal(addressKey("::FFFF:203.0.113.7", true, EMPTY_ALLOW), "203.0.113.0/24");
  });
  test("IPv6 per /64, whatever the spelling", () => {
    const key = "2001:db8:0:1::/64";
    assert.equal(addressKey("2001:db8:0:1::5", false, EMPTY_ALLOW), key);
    assert.equal(addressKey("2001:0DB8:0000:0001:ffff:1:2:3", false, EMPTY_ALLOW), key);
    assert.equal(addressKey("[2001:db8:0:1:a::1]", false, EMPTY_ALLOW), key);
    assert.notEqual(addressKey("2001:db8:0:2::5", false, EMPTY_ALLOW), key);
  });
  test("unreadable addresses are not counted", () => {
    for (const bad of [
      "",
      "1.2.3",
      "1.2.3.256",
      "1.2.3.4.5",
      "01234.1.1.1",
      "fe80::1%eth0",
      "1::2::3",
      "g::1",
      "x",
    ]) {
      assert.equal(addressKey(bad, false, EMPTY_ALLOW), null, bad);
    }
    for (const bad of [
      "1:2:3:4:5:6:7:8:9",
      "1:2:3:4:5:6:7",
      ":1::",
      "1::2:",
      "12345::",
      "::1.2.3",
      "1:2:3:4:5:6:7::8",
    ]) {
      assert.equal(parseIpv6Groups(bad), null, bad);
    }
    assert.deepEqual(parseIpv6Groups("::"), [0, 0, 0, 0, 0, 0, 0, 0]);
    assert.deepEqual(parseIpv6Groups("1::"), [1, 0, 0, 0, 0, 0, 0, 0]);
    assert.deepEqual(parseIpv6Groups("::2:3"), [0, 0, 0, 0, 0, 0, 2, 3]);
    assert.deepEqual(parseIpv6Groups("64:ff9b::192.0.2.1"), [0x64, 0xff9b, 0, 0, 0, 0, 0xc000, 0x0201]);
    assert.deepEqual(parseIpv6Groups("1:2:3:4:5:6:7:8"), [1, 2, 3, 4, 5, 6, 7, 8]);
  });
  test("the allow-list takes CIDRs and plain addresses of both families", () => {
    const allow = parseAllowList(["10.0.0.0/8", "198.51.100.9", "2001:db8::/32", "0.0.0.0/0"]);
    assert.equal(addressKey("10.200.1.1", false, allow), null);
    assert.equal(addressKey("2001:db8:ffff::1", false, allow), null);
    assert.equal(addressKey("2001:db9::1", false, allow), "2001:db9:0:0::/64");
    const odd = parseAllowList(["2001:db8:8000::/33"]);
    assert.equal(addressKey("2001:db8:8001::1", false, odd), null);
    assert.equal(addressKey("2001:db8:7fff::1", false, odd), "2001:db8:7fff:0::/64");
    const narrow = parseAllowList(["198.51.100.9", "10.0.0.0/8"]);
    assert.equal(addressKey("198.51.100.9", false, narrow), null);
    assert.equal(addressKey("198.51.100.10", false, narrow), "198.51.100.10");
    assert.equal(addressKey("11.0.0.1", false, narrow), "11.0.0.1");
    assert.throws(() => parseAllowList(["10.0.0.0/33"]), /10\.0\.0\.0\/33/);
    assert.throws(() => parseAllowList(["example.com"]), /example\.com/);
    assert.equal(isAddressOrCidr("::/0"), true);
    assert.equal(isAddressOrCidr("1.2.3.4/"), false);
  });
});

describe("one tick", () => {
  test("at the limit nothing happens, and the same state object comes back", () => {
    const decided = decideFairUse(FRESH_STATE, 3, three, NOW, OPTIONS);
    assert.equal(decided.state, FRESH_STATE);
    assert.deepEqual(decided.actions, []);
  });
  test("limit 0 is unlimited", () => {
    const many = Array.from({ length: 50 }, (_, i) => seen(`192.0.2.${i}`));
    assert.deepEqual(decideFairUse(FRESH_STATE, 0, many, NOW, OPTIONS).actions, []);
  });
  test("over the limit with no grace: a warning and a block in the same tick", () => {
    const { state, actions } = decideFairUse(FRESH_STATE, 2, three, NOW, OPTIONS);
    assert.deepEqual(
      actions.map((a) => a.type),
      ["warn", "block"],
    );
    const block = actions[1];
    assert.equal(block?.type, "block");
    if (block?.type !== "block") return;
    assert.deepEqual(
      [block.count, block.limit, block.strike, block.periodMs, block.untilMs],
      [3, 2, 1, 10 * MIN, NOW + 10 * MIN],
    );
    assert.deepEqual(block.addresses, ["127.0.0.2", "127.0.0.3", "127.0.0.4"]);
    assert.equal(state.blockedUntilMs, NOW + 10 * MIN);
  });
  test("with a grace the warning stands first; the block comes when the excess outlasts it", () => {
    const options = { ...OPTIONS, warnGraceMs: 2 * MIN };
    const warned = decideFairUse(FRESH_STATE, 2, three, NOW, options);
    assert.deepEqual(
      warned.actions.map((a) => a.type),
      ["warn"],
    );
    const again = decideFairUse(warned.state, 2, three, NOW + MIN, options);
    assert.deepEqual(again.actions, []);
    assert.equal(again.state, warned.state);
    const blocked = decideFairUse(warned.state, 2, three, NOW + 2 * MIN, options);
    assert.deepEqual(
      blocked.actions.map((a) => a.type),
      ["block"],
    );
    // back under the limit before the grace ends: the warning is cleared, the next excess warns again
    const calm = decideFairUse(warned.state, 2, three.slice(0, 2), NOW + MIN, options);
    assert.equal(calm.state.warnedAtMs, null);
    assert.deepEqual(
      decideFairUse(calm.state, 2, three, NOW + 3 * MIN, options).actions.map((a) => a.type),
      ["warn"],
    );
  });
  test("the window slides: addresses last seen before it do not count", () => {
    const old = [seen("127.0.0.2", 11), seen("127.0.0.3", 1), seen("127.0.0.4", 2)];
    assert.deepEqual(decideFairUse(FRESH_STATE, 2, old, NOW, OPTIONS).actions, []);
    assert.equal(decideFairUse(FRESH_STATE, 2, old, NOW - 2 * MIN, OPTIONS).actions.length, 2);
  });
  test("the same address on two nodes counts once; a /64 counts once; the /24 tolerance joins neighbours", () => {
    const twice = [seen("127.0.0.2"), seen("127.0.0.2", 3), seen("2001:db8::1"), seen("2001:db8::2")];
    assert.deepEqual(decideFairUse(FRESH_STATE, 2, twice, NOW, OPTIONS).actions, []);
    const nat = [seen("100.64.0.1"), seen("100.64.0.2"), seen("100.64.0.3")];
    assert.equal(decideFairUse(FRESH_STATE, 2, nat, NOW, OPTIONS).actions.length, 2);
    assert.deepEqual(decideFairUse(FRESH_STATE, 2, nat, NOW, { ...OPTIONS, tolerance24: true }).actions, []);
  });
  test("allow-listed addresses are not counted", () => {
    const options = { ...OPTIONS, allow: parseAllowList(["127.0.0.4"]) };
    assert.deepEqual(decideFairUse(FRESH_STATE, 2, three, NOW, options).actions, []);
  });
});

describe("block and release", () => {
  const blocked = decideFairUse(FRESH_STATE, 2, three, NOW, OPTIONS).state;
  test("a block holds until its end, whatever is seen", () => {
    const during = decideFairUse(blocked, 2, three, NOW + 9 * MIN, OPTIONS);
    assert.equal(during.state, blocked);
    assert.deepEqual(during.actions, []);
  });
  test("it ends by itself; the sightings before the release do not count again", () => {
    const released = decideFairUse(blocked, 2, three, NOW + 10 * MIN, OPTIONS);
    assert.deepEqual(released.actions, [{ type: "release", reason: "ended" }]);
    assert.equal(released.state.blockedUntilMs, null);
    const next = decideFairUse(released.state, 2, three, NOW + 10 * MIN + 1000, OPTIONS);
    assert.deepEqual(next.actions, []);
  });
  test("lifting the limit (0) releases at once", () => {
    const lifted = decideFairUse(blocked, 0, three, NOW + MIN, OPTIONS);
    assert.deepEqual(lifted.actions, [{ type: "release", reason: "limit_lifted" }]);
  });
  test("the period grows on repeat, the last one repeats, and a long calm forgets", () => {
    let state: FairUseState = FRESH_STATE;
    let now = NOW;
    const periods: number[] = [];
    for (let round = 0; round < 4; round++) {
      const fresh = three.map((s) => ({ ...s, lastSeenMs: now - 1000 }));
      const decided = decideFairUse(state, 2, fresh, now, OPTIONS);
      const block = decided.actions.find((a) => a.type === "block");
      assert.ok(block?.type === "block", `round ${round} blocks`);
      periods.push(block.periodMs / MIN);
      now = block.untilMs;
      state = decideFairUse(decided.state, 2, [], now, OPTIONS).state;
      now += MIN;
    }
    assert.deepEqual(periods, [10, 60, 1440, 1440]);
    const later = now + OPTIONS.forgetMs + 1;
    const fresh = three.map((s) => ({ ...s, lastSeenMs: later - 1000 }));
    const forgotten = decideFairUse(state, 2, fresh, later, OPTIONS).actions.find((a) => a.type === "block");
    assert.ok(forgotten?.type === "block");
    assert.deepEqual([forgotten.strike, forgotten.periodMs], [1, 10 * MIN]);
  });
});
