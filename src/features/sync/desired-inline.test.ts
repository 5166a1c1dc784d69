// A full apply builds its users slice by slice and appends each slice to the AddInbound request as it
// is built (desiredInlineInSlices), so an inbound's built users are never all held at once. The rule:
// the request, the split and the users left for AddUser are exactly those of building everything
// first and then appending (desiredInboundInSlices + withInlineUsersInSlices), at any cap; a refusal
// names the grant as given, and nothing is returned to send.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";
import { toBinary } from "@bufbuild/protobuf";
import { withInlineUsersInSlices } from "../../cores/inbound-builder/inline-users.ts";
import { InboundHandlerConfigSchema as V2InboundSchema } from "../../gen/v2ray/core_pb.ts";
import { desiredInboundInSlices, desiredInlineInSlices, type InboundSpec } from "./desired.ts";

/** More than two build slices (500 each), so slices are appended one after another. */
const USERS = 2_345;

function spec(protocol: "vless" | "vmess", grants: InboundSpec["grants"]): InboundSpec {
  const settings = protocol === "vless" ? { clients: [], decryption: "none" } : { clients: [] };
  return {
    template: {
      config: { listen: "127.0.0.1", port: "{{port}}", tag: "{{tag}}", protocol, settings },
      variables: [],
      client_flow: "",
    },
    protocol,
    shadowsocksMethod: null,
    tag: `inline-${protocol}`,
    port: 20_000,
    values: {},
    secrets: {},
    grants,
  } as InboundSpec;
}

const grants = Array.from({ length: USERS }, (_, i) => ({
  proxyUserId: `u-${String(i).padStart(16, "0")}`,
  credential: randomUUID(),
  level: 0,
}));

async function builtFirst(of: InboundSpec, cap: number) {
  const desired = await desiredInboundInSlices(of, "v2ray-4");
  assert.ok(desired.ok && desired.value.inbound !== undefined);
  const split = await withInlineUsersInSlices(
    desired.value.inbound,
    desired.value.users,
    cap,
    () => undefined,
  );
  return { split, rest: desired.value.users.slice(split.inlined) };
}

describe("users appended to the AddInbound as they are built", () => {
  for (const protocol of ["vless", "vmess"] as const) {
    for (const cap of [Number.POSITIVE_INFINITY, 60_000, 0]) {
      test(`${protocol}, cap ${cap}: the same request, split and AddUser rest as building all first`, async () => {
        const of = spec(protocol, grants);
        const want = await builtFirst(of, cap);
        const got = await desiredInlineInSlices(of, "v2ray-4", cap);
        assert.ok(got.ok);
        assert.ok(got.value.request !== undefined);
        assert.equal(got.value.inlined, want.split.inlined);
        if (cap === Number.POSITIVE_INFINITY) assert.equal(got.value.inlined, USERS);
        if (cap === 60_000) assert.ok(got.value.inlined > 0 && got.value.inlined < USERS);
        assert.deepEqual(
          toBinary(V2InboundSchema, got.value.request.config as never),
          toBinary(V2InboundSchema, want.split.inbound.config as never),
        );
        assert.deepEqual(got.value.request.emails, want.split.inbound.emails);
        assert.deepEqual(
          got.value.rest.map((user) => [user.email, user.credential]),
          want.rest.map((user) => [user.email, user.credential]),
        );
      });
    }
  }

  test("a grant that does not build refuses the whole inbound, named as given", async () => {
    const bad = grants.map((g, i) => (i === 1_500 ? { ...g, credential: "not-a-uuid" } : g));
    const got = await desiredInlineInSlices(spec("vless", bad), "v2ray-4", Number.POSITIVE_INFINITY);
    assert.equal(got.ok, false);
    assert.ok(!got.ok && got.problems.some((p) => p.path.startsWith("grants[1500].")), JSON.stringify(got));
  });
});
