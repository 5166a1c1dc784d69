// A traffic poll's in-place reading of QueryStats answers (traffic-scan.ts) agrees with the full
// protobuf decoder followed by parseTraffic, the rule it replaces, for both namespaces: on awkward
// names and values, on random answers, and on every truncation and random corruption of an answer,
// where it either throws its own clear error or agrees (a cut at a Stat's end is a shorter answer).
// It is stricter than protobuf-es in one way only: it refuses what the protobuf format forbids and
// protobuf-es lets through (a name or value running past its Stat's end, a group-encoded Stat); a core
// never sends those, and refusing beats counting bytes read from the next Stat.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import {
  decodeTraffic,
  encodeTraffic,
  parseTraffic,
  type TrafficDeltas,
} from "../features/traffic/traffic.ts";
import * as v2rayStats from "../gen/v2ray/app/stats_command_pb.ts";
import * as xrayStats from "../gen/xray/app/stats_command_pb.ts";
import { API_INBOUND_TAGS, type CoreStat } from "./core-types.ts";
import { joinTraffic, scanTraffic, TrafficScanError } from "./traffic-scan.ts";
import { v2rayApi } from "./v2ray-api.ts";
import { xrayApiFor } from "./xray-api.ts";

const AWKWARD: CoreStat[] = [
  { name: "user>>>u-1>>>traffic>>>uplink", value: 10n },
  { name: "user>>>u-1>>>traffic>>>downlink", value: 20n },
  { name: "user>>>u-1>>>traffic>>>uplink", value: 5n }, // the same counter twice: summed
  { name: "user>>>u-2>>>traffic>>>downlink", value: 0n },
  { name: "user>>>u-3>>>traffic>>>downlink", value: -7n },
  { name: "user>>>u-4>>>traffic>>>downlink", value: 9_007_199_254_740_993n }, // above 2^53
  { name: "user>>>u-5>>>traffic>>>uplink", value: 4_611_686_018_427_387_904n }, // 2^62
  { name: "user>>>u-6>>>traffic>>>uplink", value: 2_147_483_648n }, // 2^31
  { name: "user>>>a>>>b>>>traffic>>>uplink", value: 3n }, // the email is everything in between
  { name: "user>>>>>>traffic>>>uplink", value: 3n }, // no email: not a counter
  { name: "user>>>x>>>traffic>>>sideways", value: 3n },
  { name: 'user>>>quo"te\\back>>>traffic>>>uplink', value: 4n },
  { name: "user>>>line\nbreak>>>traffic>>>uplink", value: 4n }, // `.` does not cross a line break
  { name: "user>>>ü-ser>>>traffic>>>downlink", value: 6n },
  { name: "user>>>tab\there>>>traffic>>>downlink", value: 6n },
  { name: "inbound>>>vless-ü>>>traffic>>>downlink", value: 1n },
  { name: "inbound>>>vless-443>>>traffic>>>uplink", value: 100n },
  { name: "inbound>>>api>>>traffic>>>downlink", value: 999n },
  { name: "inbound>>>api-in>>>traffic>>>uplink", value: 999n },
  { name: "outbound>>>direct>>>traffic>>>downlink", value: 999n },
  { name: "", value: 7n },
  { name: "user>>>u-7>>>traffic>>>uplink", value: 1n },
];

function encode(stats: readonly CoreStat[], namespace: "v2ray" | "xray" = "v2ray"): Uint8Array {
  if (namespace === "xray") {
    return toBinary(
      xrayStats.QueryStatsResponseSchema,
      create(xrayStats.QueryStatsResponseSchema, { stat: stats.map((s) => create(xrayStats.StatSchema, s)) }),
    );
  }
  return toBinary(
    v2rayStats.QueryStatsResponseSchema,
    create(v2rayStats.QueryStatsResponseSchema, { stat: stats.map((s) => create(v2rayStats.StatSchema, s)) }),
  );
}

/** The rule: the full decoder, then parseTraffic. */
function generic(bytes: Uint8Array): TrafficDeltas {
  return parseTraffic(v2rayApi.queryStats("", true).decode(bytes), API_INBOUND_TAGS);
}

/** The scan, as the journal stores it and the fold reads it back. */
function scanned(bytes: Uint8Array, decode = v2rayApi.queryTraffic("", true).decode): TrafficDeltas {
  return decodeTraffic(encodeTraffic(decode(bytes)));
}

function randomAnswer(random: () => number): CoreStat[] {
  const names = ["u-1", "u-2", "ü", 'q"', "a>>>b", "x"];
  return Array.from({ length: Math.floor(random() * 40) }, () => {
    const kind = ["user", "inbound", "outbound"][Math.floor(random() * 3)];
    const name = names[Math.floor(random() * names.length)];
    const direction = ["uplink", "downlink", "both"][Math.floor(random() * 3)];
    const value = BigInt(Math.floor(random() * 2 ** 40)) - (random() < 0.1 ? 2n ** 41n : 0n);
    return { name: `${kind}>>>${name}>>>traffic>>>${direction}`, value: random() < 0.2 ? 0n : value };
  });
}

/** A small deterministic generator (mulberry32), so a failure can be replayed. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("a traffic poll's counters read in place", () => {
  test("the same totals as the full decoder and parseTraffic, on awkward names and values, in both namespaces", () => {
    for (const namespace of ["v2ray", "xray"] as const) {
      const bytes = encode(AWKWARD, namespace);
      const api = namespace === "v2ray" ? v2rayApi : xrayApiFor("xray-25.10");
      const decode = api.queryTraffic("", true).decode;
      const rule = generic(bytes);
      assert.equal(rule.users.size, 9, "the fixture reaches every kind of name");
      assert.deepEqual(scanned(bytes, decode), rule);
    }
  });

  test("an email's counters are summed once per poll: the journal holds one item per user", () => {
    const traffic = scanTraffic(encode(AWKWARD), API_INBOUND_TAGS);
    assert.equal(traffic.users.count, 9);
    assert.equal(traffic.users.json.split("],[").length, 9);
    assert.equal([...traffic.inbounds.keys()].sort().join(","), "vless-443,vless-ü");
  });

  test("random answers: the same totals as the rule", () => {
    const random = seeded(52);
    for (let i = 0; i < 300; i++) {
      const bytes = encode(randomAnswer(random));
      assert.deepEqual(scanned(bytes), generic(bytes), `answer ${i}`);
    }
  });

  test("a truncated answer throws a clear error, or is a shorter answer read as the rule reads it", () => {
    const bytes = encode(AWKWARD);
    for (let cut = 1; cut < bytes.length; cut++) {
      const part = bytes.subarray(0, cut);
      let rule: TrafficDeltas | undefined;
      try {
        rule = generic(part);
      } catch {
        rule = undefined;
      }
      if (rule === undefined) {
        assert.throws(() => scanTraffic(part), TrafficScanError, `cut at ${cut}`);
      } else {
        assert.deepEqual(scanned(part), rule, `cut at ${cut}`);
      }
    }
  });

  test("corrupted bytes: a TrafficScanError or the rule's own reading, never another count", () => {
    const random = seeded(7);
    const bytes = encode(AWKWARD);
    let refused = 0;
    for (let i = 0; i < 2000; i++) {
      const broken = Uint8Array.from(bytes);
      for (let k = 0; k < 1 + Math.floor(random() * 3); k++) {
        broken[Math.floor(random() * broken.length)] = Math.floor(random() * 256);
      }
      let rule: TrafficDeltas | undefined;
      try {
        rule = generic(broken);
      } catch {
        rule = undefined;
      }
      try {
        const read = scanned(broken);
        assert.ok(rule !== undefined, `corruption ${i}: read where the full decoder refuses`);
        assert.deepEqual(read, rule, `corruption ${i}`);
      } catch (error) {
        if (!(error instanceof TrafficScanError)) throw error;
        refused++;
      }
    }
    assert.ok(refused > 0, "some corruptions are refused");
  });

  test("answers joined (a carried-over poll and the next): every byte kept, the inbounds added", () => {
    const first = scanTraffic(encode(AWKWARD));
    const second = scanTraffic(encode([{ name: "user>>>u-1>>>traffic>>>uplink", value: 1n }]));
    const joined = decodeTraffic(encodeTraffic(joinTraffic(first, second)));
    assert.deepEqual(joined.users.get("u-1"), { uplinkBytes: 16, downlinkBytes: 20 });
    assert.equal(joinTraffic(first, first).inbounds.get("vless-443")?.uplinkBytes, 200);
  });
});
