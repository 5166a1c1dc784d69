// A full apply that a core stops answering halfway is resumed, not redone, against a real V2Ray
// core, on whichever dialect DATABASE_URL selects:
// - the core is frozen (SIGSTOP) in the middle of the push of a full apply: the calls in flight miss
//   their deadline and the reconcile stops. What reached the core is recorded synced (the inbound
//   too), the rest pending. Thawed, the core carries out the requests that were waiting in its
//   socket, so some users whose AddUser "timed out" are on it after all;
// - the next tick resumes: the inbound is not replaced, only the users not confirmed are sent, once
//   each, and an "already exists" for a user whose add went unanswered is that very user (kept, not
//   removed and added again); afterwards every user is on the core and the state is recorded whole;
// - the "already exists" rule itself, with an answer lost on purpose after the real core took the
//   user: the same user is kept; one whose credential changed since is replaced.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import {
  bulkGrant,
  createUsers,
  grantsOf,
  probeCore,
  waitConverged,
} from "../../../test/support/convergence.ts";
import { waitFor } from "../../../test/support/poll.ts";
import { freePort } from "../../../test/support/ports.ts";
import { createInbound, registerServer, templateFor } from "../../../test/support/provisioning.ts";
import { requires } from "../../../test/support/requires.ts";
import { CleanupStack, startV2rayServer } from "../../../test/support/v2ray.ts";
import type { CoreClient } from "../../cores/core-client.ts";
import type { InboundRef } from "../../cores/core-types.ts";
import { buildUser } from "../../cores/inbound-builder/build.ts";
import type { BuiltUser } from "../../cores/inbound-builder/built.ts";
import { CoreConflictError, CoreTimeoutError } from "../../lib/errors.ts";
import { limiter } from "../../lib/limiter.ts";
import { pushUsers, type UserPush } from "./push.ts";

const needs = requires("v2ray");
const stack = new CleanupStack();
const USERS = 400;
/** The AddUser call at which the core is frozen: well inside the push, with calls in flight. */
const FREEZE_AT = 150;
/** About 100 of the users fit inline (≈ 95 bytes each on V2Ray vless). */
const INLINE_BYTES = 10_000;
let t: TestApp;

needs.before(async () => {
  // A small inline cap: about a quarter of the users go inline in AddInbound, the rest by AddUser,
  // so the push the core is frozen in follows an inbound that already carried users.
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "3000" }, { inlineUsersMaxBytes: INLINE_BYTES });
});
needs.after(async () => {
  await t?.close();
  await stack.run();
});

async function grantStates(serverId: string): Promise<Record<string, number>> {
  const rows = await t.deps.database.db
    .selectFrom("user_access")
    .select("sync_state")
    .where("server_id", "=", serverId)
    .execute();
  const out: Record<string, number> = {};
  for (const row of rows) out[row.sync_state] = (out[row.sync_state] ?? 0) + 1;
  return out;
}

async function inboundState(inboundId: string): Promise<string> {
  const row = await t.deps.database.db
    .selectFrom("server_inbounds")
    .select("sync_state")
    .where("id", "=", inboundId)
    .executeTakeFirstOrThrow();
  return row.sync_state;
}

/** Counts the pooled client's calls (the real ones go through); `onAdd` runs before each AddUser. */
function countCalls(client: CoreClient, onAdd: (n: number) => void) {
  const calls = { add: 0, conflicts: 0, remove: 0, replace: 0, inline: 0 };
  const { addUser, removeUser, replaceInbound } = client;
  client.addUser = async (ref, user) => {
    calls.add += 1;
    onAdd(calls.add);
    try {
      return await addUser.call(client, ref, user);
    } catch (error) {
      if (error instanceof CoreConflictError) calls.conflicts += 1;
      throw error;
    }
  };
  client.removeUser = (tag, email) => {
    calls.remove += 1;
    return removeUser.call(client, tag, email);
  };
  client.replaceInbound = (inbound) => {
    calls.replace += 1;
    calls.inline += inbound.emails.length;
    return replaceInbound.call(client, inbound);
  };
  return {
    calls,
    reset: () => Object.assign(calls, { add: 0, conflicts: 0, remove: 0, replace: 0, inline: 0 }),
    restore: () => Object.assign(client, { addUser, removeUser, replaceInbound }),
  };
}

describe("a full apply stopped by a silent core is resumed", needs, () => {
  test(`a core frozen during the push of ${USERS} users: the next tick sends only what was not confirmed`, async (ctx) => {
    const core = await startV2rayServer(stack.add);
    const server = await registerServer(t, core.apiPort);
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const inbound = await createInbound(t, server.id, { template_id: template.id, port: await freePort() });
    const granted = await bulkGrant(t, server.id, inbound.id, await createUsers(t.deps, USERS, "resume"));
    assert.deepEqual(granted.sync, { synced: USERS, pending: 0, error: 0 });
    // A new core process holds nothing, and no full apply was ever recorded: the first tick applies all.
    await core.restart();

    let frozen = false;
    const thaw = () => {
      if (frozen) process.kill(core.pid(), "SIGCONT");
      frozen = false;
    };
    stack.add(thaw);
    const client = await t.deps.services.servers.clientOf(server.id);
    let armed = true;
    const counted = countCalls(client, (n) => {
      if (armed && n === FREEZE_AT) {
        process.kill(core.pid(), "SIGSTOP");
        frozen = true;
        armed = false;
      }
    });
    ctx.after(counted.restore);
    const reconciler = t.deps.services.reconciler;
    await t.deps.leases.claim([server.id]);

    const first = await reconciler.tick(server.id, new AbortController().signal);
    assert.ok(frozen, `the core was frozen (AddUser calls: ${counted.calls.add})`);
    thaw();
    assert.equal(first?.mode, "full", JSON.stringify(first));
    assert.equal(first?.is_complete, false, JSON.stringify(first));
    assert.equal(counted.calls.replace, 1);
    assert.ok(
      counted.calls.inline > 0 && counted.calls.inline < USERS - FREEZE_AT,
      `inline: ${counted.calls.inline}`,
    );
    assert.equal(await inboundState(inbound.id), "synced", "the inbound reached the core: kept");
    const afterFirst = await grantStates(server.id);
    const pending = afterFirst.pending ?? 0;
    const confirmed = counted.calls.inline + FREEZE_AT - 64 - 1;
    assert.ok((afterFirst.synced ?? 0) >= confirmed, JSON.stringify(afterFirst));
    assert.ok(pending > 0, JSON.stringify(afterFirst));
    assert.equal((afterFirst.synced ?? 0) + pending, USERS, JSON.stringify(afterFirst));
    assert.equal((await reconciler.state(server.id)).appliedCoreStartedAt, null, "not whole yet");

    counted.reset();
    const second = await waitFor(() => reconciler.tick(server.id, new AbortController().signal), {
      what: "a tick on the thawed core",
      timeoutMs: 20_000,
    });
    assert.equal(second.mode, "incremental", JSON.stringify(second));
    assert.equal(second.is_complete, true, JSON.stringify(second));
    assert.equal(counted.calls.replace, 0, "the inbound is not replaced");
    assert.equal(counted.calls.add, pending, "each user not confirmed is sent once, the others not at all");
    assert.equal(counted.calls.remove, 0, "an unanswered add found on the core is that very user");
    ctx.diagnostic(
      `first pass: ${afterFirst.synced ?? 0} confirmed, ${pending} not; second pass: ${counted.calls.add} AddUser, ${counted.calls.conflicts} of them "already exists"`,
    );

    await waitConverged(t.deps, server.id);
    const probe = await probeCore(core.apiAddress, await grantsOf(t.deps, server.id));
    assert.equal(probe.present.length, USERS, `absent: ${probe.absent.length}`);
    assert.notEqual((await reconciler.state(server.id)).appliedCoreStartedAt, null, "recorded whole");
  });

  test('"already exists" after a lost answer: the same user is kept, a changed credential replaced', async () => {
    const core = await startV2rayServer(stack.add);
    const server = await registerServer(t, core.apiPort);
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const inbound = await createInbound(t, server.id, { template_id: template.id, port: await freePort() });
    const real = await t.deps.services.servers.clientOf(server.id);
    const ref: InboundRef = { tag: inbound.tag as string, protocol: "vless" };

    // The real core takes the user; its answer is then lost, as a missed deadline loses it.
    const losing = new Set<string>();
    const calls = { add: 0, remove: 0 };
    const client = new Proxy(real, {
      get(target, key) {
        if (key === "addUser") {
          return async (r: InboundRef, user: BuiltUser) => {
            calls.add += 1;
            await target.addUser(r, user);
            if (losing.delete(user.email))
              throw new CoreTimeoutError("AddUser: no answer before the deadline");
          };
        }
        if (key === "removeUser") {
          return (tag: string, email: string) => {
            calls.remove += 1;
            return target.removeUser(tag, email);
          };
        }
        const value = Reflect.get(target, key, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const push = (email: string, credential: string, isSlotEmpty = false): UserPush => {
      const built = buildUser("vless", "v2ray", { email, credential });
      if (!built.ok) throw new Error(JSON.stringify(built.problems));
      return { accessId: email, email, user: built.value, replaceFirst: false, isSlotEmpty };
    };
    const once = (p: UserPush) => pushUsers(client, ref, [p], limiter(1));

    const credential = randomUUID();
    losing.add("same@resume");
    const lost = await once(push("same@resume", credential, true));
    assert.ok(lost.down instanceof CoreTimeoutError);
    assert.deepEqual(lost.notSent, ["same@resume"]);
    Object.assign(calls, { add: 0, remove: 0 });
    const kept = await once(push("same@resume", credential));
    assert.deepEqual(kept.synced, ["same@resume"]);
    assert.deepEqual(calls, { add: 1, remove: 0 }, "the user sent before is kept as it is");

    losing.add("changed@resume");
    await once(push("changed@resume", randomUUID(), true));
    Object.assign(calls, { add: 0, remove: 0 });
    const replaced = await once(push("changed@resume", randomUUID()));
    assert.deepEqual(replaced.synced, ["changed@resume"]);
    assert.deepEqual(calls, { add: 2, remove: 1 }, "another credential: removed and added again");

    // Remembered only for an empty slot: where the core might have held an older copy, the safe path.
    const unknown = randomUUID();
    losing.add("unknown@resume");
    await once(push("unknown@resume", unknown));
    Object.assign(calls, { add: 0, remove: 0 });
    const again = await once(push("unknown@resume", unknown));
    assert.deepEqual(again.synced, ["unknown@resume"]);
    assert.deepEqual(calls, { add: 2, remove: 1 }, "not known to be the user sent: replaced");
  });
});
