// Users inline in AddInbound (inbound-builder/inline-users.ts), for every wire layout and every
// protocol whose proxy holds users: the request with users appended to an empty inbound's proxy
// settings decodes, by `protoc --decode` against the layout's own .proto files, to exactly the tree
// of the same inbound built with those users as clients in its JSON, with no unknown field. The size
// cap is checked on the encoded request bytes.

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
import { buildInbound } from "./inbound-builder/build.ts";
import type { BuiltUser } from "./inbound-builder/built.ts";
import { inboundSecrets, summarizeBuiltInbound } from "./inbound-builder/guards.ts";
import {
  INLINE_REQUEST_MAX_BYTES,
  takesInlineUsers,
  withInlineUsers,
  withInlineUsersInSlices,
} from "./inbound-builder/inline-users.ts";
import { layoutFlavor, WIRE_LAYOUTS } from "./wire-layout.ts";

const ADD_INBOUND = {
  v2ray: "v2ray.core.app.proxyman.command.AddInboundRequest",
  xray: "xray.app.proxyman.command.AddInboundRequest",
};

describe("users appended inline decode like the same inbound built with them as clients", () => {
  for (const layout of WIRE_LAYOUTS) {
    for (const c of INLINE_CASES.filter((candidate) => takesUsers(candidate, layout))) {
      test(`${layout}: ${c.name}`, () => {
        const { users, clients } = usersOf(c, layout, 3);
        const empty = inboundOf(c, layout, []);
        const split = withInlineUsers(empty, users);
        assert.equal(split.inlined, 3);
        assert.deepEqual(split.inbound.emails, ["u0@t", "u1@t", "u2@t"]);
        const api = apiOf(layout);
        const flavor = layoutFlavor(layout);
        const inline = protocDecodeTree(layout, ADD_INBOUND[flavor], api.addInbound(split.inbound).request);
        const reference = inboundOf(c, layout, clients);
        const whole = protocDecodeTree(layout, ADD_INBOUND[flavor], api.addInbound(reference).request);
        assert.deepEqual(unknownFields(inline), [], inline);
        assert.equal(inline, whole);
        assert.equal(inline.match(/email: "u\d@t"/g)?.length, 3, inline);
        // The built inbound handed in is not changed.
        assert.deepEqual(empty.emails, []);
      });
    }
  }

  test("v2ray-4 shadowsocks holds its one user already: nothing is appended", () => {
    const json = {
      tag: "ss",
      port: 20_001,
      protocol: "shadowsocks",
      settings: { method: "aes-128-gcm", clients: [{ password: "p", email: "a@t" }] },
    };
    const built = buildInbound(json, "v2ray-4");
    assert.ok(built.ok);
    assert.equal(takesInlineUsers(built.value), false);
    const split = withInlineUsers(built.value, []);
    assert.equal(split.inlined, 0);
    assert.equal(split.inbound, built.value);
  });
});

describe("the size cap is measured on the encoded AddInbound request", () => {
  for (const layout of ["v2ray-4", "xray-1.8", "xray-25.10"] as const) {
    test(`${layout}: as many users as fit, the rest left for AddUser`, () => {
      const c = INLINE_CASES[0] as InlineCase;
      const { users } = usersOf(c, layout, 200);
      const empty = inboundOf(c, layout, []);
      const api = apiOf(layout);
      const cap = 4096;
      const split = withInlineUsers(empty, users, cap);
      assert.ok(split.inlined > 0 && split.inlined < 200, `inlined ${split.inlined}`);
      assert.ok(api.addInbound(split.inbound).request.byteLength <= cap);
      const more = withInlineUsers(empty, users.slice(0, split.inlined + 1), Number.POSITIVE_INFINITY);
      // One user more would not fit (within the estimate's 16 bytes of slack).
      assert.ok(api.addInbound(more.inbound).request.byteLength > cap - 16);
    });
  }

  test("a user built for another layout is refused, never sent", () => {
    const c = INLINE_CASES[0] as InlineCase;
    const { users } = usersOf(c, "xray-1.8", 1);
    assert.throws(() => withInlineUsers(inboundOf(c, "xray-25.10", []), users), /another layout/);
  });
});

describe("users appended inline are guarded as they are encoded", () => {
  for (const layout of ["v2ray-4", "xray-1.8", "xray-25.10"] as const) {
    test(`${layout}: a repeated email or credential refuses the AddInbound, numbered as in the request`, () => {
      const c = INLINE_CASES[0] as InlineCase;
      const { users, clients } = usersOf(c, layout, 3);
      // The inbound's own client u0 comes first; appended: u1, u2, then u1 again (index 3).
      const own = inboundOf(c, layout, [clients[0] as object]);
      const split = withInlineUsers(own, [users[1], users[2], users[1]] as BuiltUser[]);
      assert.equal(split.inlined, 3);
      assert.throws(
        () => apiOf(layout).addInbound(split.inbound),
        (error: Error & { details?: { path: string }[] }) => {
          const paths = (error.details ?? []).map((d) => d.path);
          assert.deepEqual(paths, [
            "inbound.proxy_settings.users[3].email",
            "inbound.proxy_settings.users[3].account",
          ]);
          return true;
        },
      );
      // The same user as the inbound's own client: a duplicate of users[0].
      const again = withInlineUsers(own, [users[0]] as BuiltUser[]);
      assert.throws(() => apiOf(layout).addInbound(again.inbound), /refused/);
    });

    test(`${layout}: appending in slices gives the same request and the same secrets`, async () => {
      const c = INLINE_CASES[1] as InlineCase;
      const { users } = usersOf(c, layout, 1200);
      const empty = inboundOf(c, layout, []);
      const whole = withInlineUsers(empty, users);
      let breaths = 0;
      const sliced = await withInlineUsersInSlices(empty, users, INLINE_REQUEST_MAX_BYTES, () => {
        breaths += 1;
        return undefined;
      });
      assert.ok(breaths >= 3, `breathed ${breaths} times`);
      assert.equal(sliced.inlined, whole.inlined);
      const api = apiOf(layout);
      assert.deepEqual(api.addInbound(sliced.inbound).request, api.addInbound(whole.inbound).request);
      assert.deepEqual(
        inboundSecrets(sliced.inbound),
        users.map((u) => u.credential.toLowerCase()),
      );
      // What the guard checked is what a full decode of the request finds.
      assert.deepEqual(
        (summarizeBuiltInbound(sliced.inbound).users ?? []).map((u) => u.credential),
        inboundSecrets(sliced.inbound),
      );
    });
  }
});
