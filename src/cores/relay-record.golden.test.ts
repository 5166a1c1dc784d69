// The node agent's record of an AddInbound that carries users inline (relay-record.ts), for every
// wire layout and every protocol whose proxy holds users: the inbound is recorded byte for byte as
// the panel's AddInbound of the same inbound without them, and each user as the panel's own
// AlterInbound AddUser of that user, byte for byte; `protoc --decode` against the layout's .proto
// files reads each recorded AddUser as that user, with no unknown field.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  apiOf,
  INLINE_CASES,
  type InlineCase,
  inboundOf,
  takesUsers,
  usersOf,
} from "../../test/support/inline-cases.ts";
import { protocDecodeTree, unknownFields } from "../../test/support/protoc.ts";
import type { BuiltUser } from "./inbound-builder/built.ts";
import { withInlineUsers } from "./inbound-builder/inline-users.ts";
import { changesOf } from "./relay-record.ts";
import { layoutFlavor, WIRE_LAYOUTS } from "./wire-layout.ts";

const ALTER = {
  v2ray: "v2ray.core.app.proxyman.command.AlterInboundRequest",
  xray: "xray.app.proxyman.command.AlterInboundRequest",
};

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

describe("an AddInbound with users inline is recorded as the inbound plus one AddUser per user", () => {
  for (const layout of WIRE_LAYOUTS) {
    for (const c of INLINE_CASES.filter((x) => takesUsers(x, layout))) {
      test(`${layout}: ${c.name}`, () => {
        const api = apiOf(layout);
        const empty = inboundOf(c, layout, [], "in-r");
        const built = usersOf(c, layout, 3, "r").users;
        const split = withInlineUsers(empty, built);
        assert.equal(split.inlined, 3);
        const add = api.addInbound(split.inbound);
        const records = changesOf(add.path, add.request);

        assert.equal(records.length, 4);
        const [inbound, ...added] = records as [(typeof records)[0], ...typeof records];
        const bare = api.addInbound(empty);
        assert.deepEqual(inbound.change, { kind: "add-inbound", tag: "in-r" });
        assert.equal(inbound.path, bare.path);
        assert.equal(hex(inbound.request), hex(bare.request), "the inbound without its users");

        built.forEach((user, i) => {
          const record = added[i];
          assert.ok(record !== undefined);
          const panel = api.addUser("in-r", user);
          assert.deepEqual(record.change, { kind: "add-user", tag: "in-r", email: `r${i}@t` });
          assert.equal(record.path, panel.path);
          assert.equal(hex(record.request), hex(panel.request), `the panel's own AddUser of r${i}@t`);
          const tree = protocDecodeTree(layout, ALTER[layoutFlavor(layout)], record.request);
          assert.deepEqual(unknownFields(tree), [], tree);
          assert.match(tree, new RegExp(`email: "r${i}@t"`));
        });
        // A call without users inline is recorded whole, as it was sent.
        const plain = changesOf(bare.path, bare.request);
        assert.equal(plain.length, 1);
        assert.equal(hex(plain[0]?.request ?? new Uint8Array()), hex(bare.request));
      });
    }
  }

  test("an AddUser and a RemoveUser are recorded as sent", () => {
    const [user] = usersOf(INLINE_CASES[0] as InlineCase, "xray-25.10", 1, "r").users as [BuiltUser];
    const api = apiOf("xray-25.10");
    const add = api.addUser("in-r", user);
    assert.deepEqual(changesOf(add.path, add.request), [
      { change: { kind: "add-user", tag: "in-r", email: "r0@t" }, path: add.path, request: add.request },
    ]);
    const remove = api.removeUser("in-r", "r0@t");
    assert.deepEqual(
      changesOf(remove.path, remove.request).map((r) => r.change),
      [{ kind: "remove-user", tag: "in-r", email: "r0@t" }],
    );
  });

  test("bytes that are not an AddInbound the panel writes record nothing, or the call whole", () => {
    const path = "/xray.app.proxyman.command.HandlerService/AddInbound";
    assert.deepEqual(changesOf(path, Uint8Array.from([0x0a, 0x05, 1])), []);
    const api = apiOf("xray-25.10");
    const split = withInlineUsers(
      inboundOf(INLINE_CASES[0] as InlineCase, "xray-25.10", [], "in-r"),
      usersOf(INLINE_CASES[0] as InlineCase, "xray-25.10", 2, "r").users,
    );
    const request = api.addInbound(split.inbound).request;
    // The config sent twice (protobuf would merge them): recorded whole, users not taken apart.
    const twice = Uint8Array.from([...request, ...request]);
    const records = changesOf(path, twice);
    assert.equal(records.length, 1);
    assert.equal(hex(records[0]?.request ?? new Uint8Array()), hex(twice));
  });
});
