// The reconciler's decision without a core: what is applied, added and removed after a restart,
// with an unknown core, from the rows that wait (tracked), and from Xray's listing; in which order;
// and that each tag, user and queued removal is handled once.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { SyncState } from "../../domain/sync.ts";
import {
  type DesiredGrant,
  type DesiredInboundRow,
  type DesiredServer,
  type ObservedInbound,
  planReconcile,
  type ReconcileAction,
} from "./plan.ts";

function grant(id: string, overrides: Partial<DesiredGrant> = {}): DesiredGrant {
  return {
    accessId: id,
    email: `u-${id}`,
    credential: `cred-${id}`,
    level: 0,
    isActive: true,
    syncState: "synced",
    ...overrides,
  };
}

function inbound(
  id: string,
  grants: DesiredGrant[],
  overrides: Partial<DesiredInboundRow> = {},
): DesiredInboundRow {
  return {
    inboundId: id,
    tag: `tag-${id}`,
    port: 10_000 + Number(id.replace(/\D/g, "") || 0),
    protocol: "vless",
    isActive: true,
    syncState: "synced",
    holdsUserInline: false,
    grants,
    ...overrides,
  };
}

function seen(
  row: DesiredInboundRow,
  users: [string, string][] = [],
  overrides: Partial<ObservedInbound> = {},
) {
  const observed: ObservedInbound = {
    protocol: row.protocol,
    portRanges: [[row.port, row.port]],
    users: new Map(users.map(([email, credential]) => [email, { credential, level: 0 }])),
    ...overrides,
  };
  return [row.tag, observed] as const;
}

const kinds = (actions: ReconcileAction[]) => actions.map((a) => a.kind);
const settleOf = (actions: ReconcileAction[]) => actions.find((a) => a.kind === "settle");
const pending: { syncState: SyncState } = { syncState: "pending" };

describe("planReconcile after a restart (V2Ray)", () => {
  test("every active inbound is applied, inactive ones settle, queued removals are moot", () => {
    const desired: DesiredServer = {
      inbounds: [
        inbound("1", [grant("a"), grant("b", pending)]),
        inbound("2", [grant("c")], { isActive: false, ...pending }),
      ],
      removals: [
        { id: "r1", tag: "old", email: null },
        { id: "r2", tag: "tag-1", email: "u-x" },
      ],
    };
    const actions = planReconcile(desired, { kind: "restarted" });
    assert.deepEqual(kinds(actions), ["apply_inbound", "settle"]);
    assert.deepEqual(actions[0], { kind: "apply_inbound", inboundId: "1", tag: "tag-1" });
    assert.deepEqual(settleOf(actions), {
      kind: "settle",
      inboundIds: ["2"],
      accessIds: [],
      removalIds: ["r1", "r2"],
    });
  });
});

describe("planReconcile with a core in an unknown state (V2Ray, never fully applied)", () => {
  test("applies active inbounds, removes inactive pending ones and queued inbounds not wanted any more", () => {
    const desired: DesiredServer = {
      inbounds: [inbound("1", [grant("a")]), inbound("2", [], { isActive: false, ...pending })],
      removals: [
        { id: "r1", tag: "deleted", email: null },
        { id: "r2", tag: "tag-1", email: "u-gone" },
        { id: "r3", tag: "deleted-too", email: "u-x" },
      ],
    };
    const actions = planReconcile(desired, { kind: "unknown" });
    assert.deepEqual(kinds(actions), [
      "remove_inbound",
      "remove_inbound",
      "remove_user",
      "apply_inbound",
      "settle",
    ]);
    assert.deepEqual(actions[0], { kind: "remove_inbound", tag: "tag-2", inboundIds: ["2"], removalIds: [] });
    assert.deepEqual(actions[1], {
      kind: "remove_inbound",
      tag: "deleted",
      inboundIds: [],
      removalIds: ["r1"],
    });
    assert.deepEqual(settleOf(actions)?.kind === "settle" && settleOf(actions), {
      kind: "settle",
      inboundIds: [],
      accessIds: [],
      removalIds: ["r2"],
    });
  });
});

describe("planReconcile from the rows that wait (V2Ray that kept its state)", () => {
  test("a pending inbound is applied whole; a pending grant on a synced inbound is added alone", () => {
    const desired: DesiredServer = {
      inbounds: [
        inbound("1", [grant("a", pending)], pending),
        inbound("2", [grant("b", pending), grant("c", pending)]),
      ],
      removals: [],
    };
    const actions = planReconcile(desired, { kind: "tracked", retryErrors: false });
    assert.deepEqual(kinds(actions), ["apply_inbound", "add_user", "add_user"]);
    assert.deepEqual(
      actions
        .filter((a) => a.kind === "add_user")
        .map((a) => a.kind === "add_user" && [a.accessId, a.replace]),
      [
        ["b", false],
        ["c", false],
      ],
    );
  });

  test("rows in error wait for the error retry; then they are tried like pending ones", () => {
    const desired: DesiredServer = {
      inbounds: [
        inbound("1", [], { syncState: "error" }),
        inbound("2", [grant("b", { syncState: "error" })]),
      ],
      removals: [],
    };
    assert.deepEqual(planReconcile(desired, { kind: "tracked", retryErrors: false }), []);
    assert.deepEqual(kinds(planReconcile(desired, { kind: "tracked", retryErrors: true })), [
      "apply_inbound",
      "add_user",
    ]);
  });

  test("queued removals run, except on a tag that is applied anyway; a deactivated inbound comes off", () => {
    const desired: DesiredServer = {
      inbounds: [inbound("1", [], pending), inbound("2", [], { isActive: false, ...pending })],
      removals: [
        { id: "r1", tag: "tag-1", email: "u-a" },
        { id: "r2", tag: "tag-9", email: "u-b" },
        { id: "r3", tag: "tag-9", email: "u-b" },
        { id: "r4", tag: "tag-8", email: null },
      ],
    };
    const actions = planReconcile(desired, { kind: "tracked", retryErrors: false });
    assert.deepEqual(kinds(actions), [
      "remove_inbound",
      "remove_inbound",
      "remove_user",
      "apply_inbound",
      "settle",
    ]);
    assert.deepEqual(actions[2], {
      kind: "remove_user",
      tag: "tag-9",
      email: "u-b",
      accessIds: [],
      removalIds: ["r2", "r3"],
    });
    assert.deepEqual(settleOf(actions), {
      kind: "settle",
      inboundIds: [],
      accessIds: [],
      removalIds: ["r1"],
    });
  });

  test("a V2Ray shadowsocks inbound holds its user inline: a pending grant re-applies the inbound", () => {
    const desired: DesiredServer = {
      inbounds: [inbound("1", [grant("a", pending)], { protocol: "shadowsocks", holdsUserInline: true })],
      removals: [],
    };
    assert.deepEqual(planReconcile(desired, { kind: "tracked", retryErrors: false }), [
      { kind: "apply_inbound", inboundId: "1", tag: "tag-1" },
    ]);
  });

  test("grants of an inactive inbound settle without a call", () => {
    const desired: DesiredServer = {
      inbounds: [inbound("1", [grant("a", pending)], { isActive: false })],
      removals: [],
    };
    assert.deepEqual(planReconcile(desired, { kind: "tracked", retryErrors: false }), [
      { kind: "settle", inboundIds: [], accessIds: ["a"], removalIds: [] },
    ]);
  });
});

describe("planReconcile from Xray's listing", () => {
  test("adds what is missing, replaces what differs, removes what is not granted, settles what is right", () => {
    const one = inbound("1", [grant("a", pending), grant("b"), grant("c"), grant("d", { isActive: false })]);
    const desired: DesiredServer = { inbounds: [one], removals: [] };
    const core = new Map([
      seen(one, [
        ["u-a", "cred-a"],
        ["u-c", "other"],
        ["u-d", "cred-d"],
        ["u-stranger", "x"],
      ]),
    ]);
    const actions = planReconcile(desired, { kind: "listed", inbounds: core });
    assert.deepEqual(actions, [
      { kind: "remove_user", tag: "tag-1", email: "u-d", accessIds: ["d"], removalIds: [] },
      { kind: "remove_user", tag: "tag-1", email: "u-stranger", accessIds: [], removalIds: [] },
      { kind: "add_user", inboundId: "1", tag: "tag-1", accessId: "b", email: "u-b", replace: false },
      { kind: "add_user", inboundId: "1", tag: "tag-1", accessId: "c", email: "u-c", replace: true },
      { kind: "settle", inboundIds: [], accessIds: ["a"], removalIds: [] },
    ]);
  });

  test("an inbound missing, on another port or of another protocol is applied whole", () => {
    const missing = inbound("1", [grant("a")]);
    const moved = inbound("2", [grant("b")]);
    const changed = inbound("3", [grant("c")]);
    const core = new Map([
      seen(moved, [["u-b", "cred-b"]], { portRanges: [[1, 2]] }),
      seen(changed, [["u-c", "cred-c"]], { protocol: "vmess" }),
    ]);
    const actions = planReconcile(
      { inbounds: [missing, moved, changed], removals: [] },
      { kind: "listed", inbounds: core },
    );
    assert.deepEqual(kinds(actions), ["apply_inbound", "apply_inbound", "apply_inbound"]);
  });

  test("an inactive inbound still on the core comes off; queued removals run only where the core has it", () => {
    const off = inbound("1", [], { isActive: false });
    const kept = inbound("2", [grant("b")]);
    const desired: DesiredServer = {
      inbounds: [off, kept],
      removals: [
        { id: "r1", tag: "gone", email: null },
        { id: "r2", tag: "listed-old", email: null },
        { id: "r3", tag: "tag-2", email: "u-b" },
        { id: "r4", tag: "tag-2", email: "u-z" },
      ],
    };
    const core = new Map([
      seen(off),
      seen(kept, [
        ["u-b", "cred-b"],
        ["u-z", "z"],
      ]),
      ["listed-old", { protocol: "vless", portRanges: [[1, 1]], users: new Map() }] as const,
    ]);
    const actions = planReconcile(desired, { kind: "listed", inbounds: core });
    assert.deepEqual(actions, [
      { kind: "remove_inbound", tag: "tag-1", inboundIds: ["1"], removalIds: [] },
      { kind: "remove_inbound", tag: "listed-old", inboundIds: [], removalIds: ["r2"] },
      { kind: "remove_user", tag: "tag-2", email: "u-z", accessIds: [], removalIds: ["r4"] },
      { kind: "settle", inboundIds: [], accessIds: [], removalIds: ["r1", "r3"] },
    ]);
  });
});
