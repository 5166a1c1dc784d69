// The agent's in-place reading of QueryStats answers agrees with the full protobuf decoder of both
// namespaces on every counter that is not zero, and refuses a truncated answer rather than guess.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import * as v2rayStats from "../gen/v2ray/app/stats_command_pb.ts";
import * as xrayStats from "../gen/xray/app/stats_command_pb.ts";
import { nonZeroStats } from "./stats-scan.ts";
import { v2rayApi } from "./v2ray-api.ts";

const stats = [
  { name: "user>>>u-0000000000000001>>>traffic>>>uplink", value: 0n },
  { name: "user>>>u-0000000000000001>>>traffic>>>downlink", value: 262_144n },
  { name: "inbound>>>vless-ü>>>traffic>>>downlink", value: 1n },
  { name: "user>>>u-0000000000000002>>>traffic>>>uplink", value: 9_007_199_254_740_993n },
  { name: "user>>>u-0000000000000003>>>traffic>>>uplink", value: -5n },
  { name: "", value: 7n },
  ...Array.from({ length: 5000 }, (_, i) => ({ name: `user>>>u-${i}>>>traffic>>>uplink`, value: 0n })),
];

describe("non-zero stats read in place", () => {
  test("the same counters and values as the full decoder, for V2Ray's and Xray's messages", () => {
    for (const [schema, stat] of [
      [v2rayStats.QueryStatsResponseSchema, v2rayStats.StatSchema],
      [xrayStats.QueryStatsResponseSchema, xrayStats.StatSchema],
    ] as const) {
      const bytes = toBinary(
        schema as typeof v2rayStats.QueryStatsResponseSchema,
        create(schema as typeof v2rayStats.QueryStatsResponseSchema, {
          stat: stats.map((s) => create(stat as typeof v2rayStats.StatSchema, s)),
        }),
      );
      const full = v2rayApi
        .queryStats("", false)
        .decode(bytes)
        .filter((s) => s.value !== 0n)
        .map((s): [string, string] => [s.name, s.value.toString()]);
      assert.equal(full.length, 5);
      assert.deepEqual(nonZeroStats(bytes), full);
    }
  });

  test("an empty answer is no counters; a truncated one throws", () => {
    assert.deepEqual(nonZeroStats(new Uint8Array()), []);
    const bytes = toBinary(
      v2rayStats.QueryStatsResponseSchema,
      create(v2rayStats.QueryStatsResponseSchema, { stat: stats.slice(1, 3) }),
    );
    for (const cut of [1, 5, bytes.length - 1]) {
      assert.throws(() => nonZeroStats(bytes.subarray(0, cut)), /truncated|overruns/, `cut at ${cut}`);
    }
  });
});
