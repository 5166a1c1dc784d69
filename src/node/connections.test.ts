// The agent's access-log reader (what IP limits count on node servers) on the line shapes of each
// core it runs: V2Ray 4.x/5.x (`1.2.3.4:5678 accepted …`, `tcp:` optional) and Xray 1.8 to 26
// (`from tcp:1.2.3.4:5678 accepted … [in -> out]` or `[in >> out]`, IPv6 in brackets), with the
// user's email at the end; lines without an email (unauthenticated, the API inbound) are ignored.
// Pure: no core, no clock but an injected one. And the cut itself (`ss -K`, as root here) on real
// loopback sockets: exactly the connections named go, one beside them on the same port stays.
import assert from "node:assert/strict";
import { connect, createServer, type Socket } from "node:net";
import { describe, test } from "node:test";
import { waitFor } from "../../test/support/poll.ts";
import { requires } from "../../test/support/requires.ts";
import { ConnectionTracker, destroySockets } from "./connections.ts";

const LINES: { core: string; line: string; ip: string; port: number; email: string }[] = [
  {
    core: "V2Ray 4.x",
    line: "2026/12/02 10:00:00 127.0.0.2:40112 accepted tcp:127.0.0.1:8080 [proxy] email: a@x",
    ip: "127.0.0.2",
    port: 40112,
    email: "a@x",
  },
  {
    core: "V2Ray 5.x",
    line: "2026/12/02 10:00:00 tcp:198.51.100.7:51000 accepted tcp:example.com:443 [in >> direct] email: b@x",
    ip: "198.51.100.7",
    port: 51000,
    email: "b@x",
  },
  {
    core: "Xray 1.8 / 24.x",
    line: "2026/12/02 10:00:00.123456 from tcp:192.0.2.10:65258 accepted tcp:142.250.196.100:443 [vless-in -> direct] email: c@x",
    ip: "192.0.2.10",
    port: 65258,
    email: "c@x",
  },
  {
    core: "Xray 25.x / 26 (udp, IPv6)",
    line: "2026/12/02 10:00:00.123456 from udp:[2001:db8::5]:443 accepted udp:8.8.8.8:53 [in >> out] email: d@x",
    ip: "2001:db8::5",
    port: 443,
    email: "d@x",
  },
  {
    core: "Xray without the transport prefix",
    line: "2026/12/02 10:00:00 from 203.0.113.9:1234 accepted tcp:1.1.1.1:443 email: e@x",
    ip: "203.0.113.9",
    port: 1234,
    email: "e@x",
  },
];

describe("the agent's access-log reader", () => {
  for (const { core, line, ip, port, email } of LINES) {
    test(`${core}: the source address and port are counted for the email`, () => {
      const tracker = new ConnectionTracker(60_000, () => 1_000);
      tracker.observe(line);
      assert.deepEqual(tracker.online(), [
        { email, addresses: [{ ip, last_seen: new Date(1_000).toISOString() }] },
      ]);
      assert.deepEqual(tracker.take(email), [{ ip, port, seenAt: 1_000 }]);
    });
  }

  test("lines without an email, rejected connections and other log lines count nothing", () => {
    const tracker = new ConnectionTracker(60_000, () => 1_000);
    tracker.observe("2026/12/02 10:00:00 from tcp:127.0.0.1:5000 accepted tcp:127.0.0.1:10085 [api -> api]");
    tracker.observe(
      "2026/12/02 10:00:00 from tcp:127.0.0.3:5000 rejected  proxy/vless/encoding: invalid request user id",
    );
    tracker.observe("2026/12/02 10:00:00 [Warning] core: Xray 26.1.1 started");
    assert.deepEqual(tracker.online(), []);
  });

  test("a source is forgotten after the window", () => {
    let now = 0;
    const tracker = new ConnectionTracker(10_000, () => now);
    tracker.observe("from tcp:192.0.2.1:1000 accepted tcp:x:443 [a >> b] email: f@x");
    now = 10_001;
    assert.deepEqual(tracker.online(), []);
  });
});

const needs = requires("ss");
describe("cutting connections with ss -K", needs, () => {
  test("the named sources' sockets are destroyed, another client's on the same listener is not", async () => {
    const accepted: Socket[] = [];
    const server = createServer((socket) => {
      accepted.push(socket);
      socket.on("error", () => {});
      socket.on("data", (chunk) => socket.write(chunk));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    const open = async () => {
      const socket = connect(port, "127.0.0.1");
      socket.on("error", () => {});
      await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
      return socket;
    };
    const [a, b, c] = [await open(), await open(), await open()];
    try {
      const closed = new Set<Socket>();
      for (const s of [a, b, c]) s.once("close", () => closed.add(s));
      const result = await destroySockets([
        { ip: "127.0.0.1", port: a.localPort as number, seenAt: 0 },
        { ip: "127.0.0.1", port: b.localPort as number, seenAt: 0 },
      ]);
      assert.equal(result.error, null);
      assert.equal(result.cut, 2);
      await waitFor(() => closed.has(a) && closed.has(b), { timeoutMs: 10_000, what: "a and b closed" });
      // c still talks
      const echoed = new Promise<string>((resolve) => c.once("data", (chunk) => resolve(String(chunk))));
      c.write("still here");
      assert.equal(await echoed, "still here");
      assert.ok(!closed.has(c));
    } finally {
      for (const s of [a, b, c, ...accepted]) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
