// Notifications reach real HTTP receivers: a webhook gets exactly the events of a scripted scenario,
// each signed; a receiver that is down gets them later, from another instance after a "restart"
// (the outbox is in the database); Telegram messages go through a local server that speaks the Bot
// API's sendMessage as Telegram documents it, in the admin's language; secrets stay secret.
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { waitFor } from "../../../test/support/poll.ts";
import { freePort } from "../../../test/support/ports.ts";
import { Dispatcher } from "./dispatcher.ts";
import { NotificationsRepository } from "./notifications.repository.ts";

type Received = { path: string; headers: IncomingMessage["headers"]; body: string };

/** A real HTTP server that records what it is sent and answers `status` (changeable). */
async function receiver(port = 0, status = 200) {
  const received: Received[] = [];
  const state = { status };
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      received.push({
        path: request.url ?? "",
        headers: request.headers,
        body: Buffer.concat(chunks).toString(),
      });
      response.writeHead(state.status, { "content-type": "text/plain" }).end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return { received, state, url, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

function verify(secret: string, got: Received): boolean {
  const timestamp = String(got.headers["x-portcullis-timestamp"]);
  const expected = `sha256=${createHmac("sha256", secret).update(`${timestamp}.${got.body}`).digest("hex")}`;
  return got.headers["x-portcullis-signature"] === expected;
}

describe("webhooks", () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(async () => {
    await t.close();
  });
  const api = (method: "GET" | "POST" | "PUT" | "DELETE", url: string, payload?: object) =>
    t.app.inject({ method, url, headers: t.auth, ...(payload === undefined ? {} : { payload }) });

  test("a receiver gets exactly the scenario's events, in order, each signed with the webhook's secret", async () => {
    const hook = await receiver();
    const onlyDeletes = await receiver();
    try {
      const created = await api("POST", "/api/webhooks", { name: "all-user-events", url: hook.url });
      assert.equal(created.statusCode, 201, created.body);
      const { id, secret } = created.json();
      assert.match(secret, /^[A-Za-z0-9_-]{43}$/);
      assert.equal(
        (await api("GET", `/api/webhooks/${id}`)).json().secret,
        undefined,
        "the secret is shown once",
      );
      await api("POST", "/api/webhooks", {
        name: "deletes-only",
        url: onlyDeletes.url,
        secret: "a-secret-of-our-own-choosing",
        events: ["user.deleted"],
      });
      const user = (await api("POST", "/api/users", { name: "Notified" })).json();
      await api("PUT", `/api/users/${user.id}`, { comment: "hello" });
      await api("DELETE", `/api/users/${user.id}`);
      await t.deps.services.dispatcher.deliverDue();

      await waitFor(() => hook.received.length >= 3 && onlyDeletes.received.length >= 1, {
        timeoutMs: 10_000,
      });
      const events = hook.received.map(
        (r) => JSON.parse(r.body) as { id: string; type: string; data: { user: { id: string } } },
      );
      assert.deepEqual(
        events.map((e) => e.type),
        ["user.created", "user.updated", "user.deleted"],
      );
      assert.ok(events.every((e) => e.data.user.id === user.id));
      assert.ok(
        hook.received.every((r) => verify(secret, r)),
        "every body is signed",
      );
      assert.equal(new Set(hook.received.map((r) => r.headers["x-portcullis-delivery"])).size, 3);
      assert.deepEqual(
        onlyDeletes.received.map((r) => JSON.parse(r.body).type),
        ["user.deleted"],
      );
      assert.ok(verify("a-secret-of-our-own-choosing", onlyDeletes.received[0] as Received));
      const log = (await api("GET", `/api/webhooks/${id}/deliveries`)).json();
      assert.deepEqual(
        log.items.map((d: { status: string }) => d.status),
        ["delivered", "delivered", "delivered"],
      );
    } finally {
      await hook.close();
      await onlyDeletes.close();
    }
  });

  test("with the receiver down and the service restarted in between, the events still arrive", async () => {
    const port = await freePort();
    const created = await api("POST", "/api/webhooks", {
      name: "down-for-a-while",
      url: `http://127.0.0.1:${port}/hook`,
      events: ["user.created"],
    });
    const { id, secret } = created.json();
    const names = ["late-1", "late-2"];
    for (const name of names) await api("POST", "/api/users", { name });
    await t.deps.services.dispatcher.deliverDue();
    const failed = (await api("GET", `/api/webhooks/${id}/deliveries`)).json().items as {
      status: string;
      attempts: number;
      last_error: string;
    }[];
    assert.deepEqual(
      failed.map((d) => [d.status, d.attempts]),
      [
        ["pending", 1],
        ["pending", 1],
      ],
    );
    assert.match(failed[0]?.last_error ?? "", /ECONNREFUSED/);

    // "Restart": a second instance on the same database, whose clock is past the backoff.
    const restarted = await createTestApp({}, { sameDatabaseAs: t });
    const hook = await receiver(port);
    try {
      const later = () => new Date(Date.now() + 3_600_000);
      const dispatcher = new Dispatcher(
        new NotificationsRepository(restarted.deps.database.db, restarted.deps.database.dialect),
        restarted.deps.secretBox,
        restarted.deps.logger,
        { telegramApiUrl: "http://127.0.0.1:9" },
        later,
      );
      await dispatcher.deliverDue();
      await waitFor(() => hook.received.length >= 2, { timeoutMs: 10_000 });
      assert.deepEqual(
        hook.received.map((r) => (JSON.parse(r.body) as { data: { user: { name: string } } }).data.user.name),
        names,
      );
      assert.ok(hook.received.every((r) => verify(secret, r)));
      // Delivered once: another pass sends nothing more.
      await dispatcher.deliverDue();
      assert.equal(hook.received.length, 2);
    } finally {
      await hook.close();
      await restarted.close();
    }
  });

  test("a receiver answering 500 is retried with backoff, then given up as dead", async () => {
    const hook = await receiver(0, 500);
    try {
      const { id } = (
        await api("POST", "/api/webhooks", { name: "always-500", url: hook.url, events: ["user.deleted"] })
      ).json();
      const queued = (await api("POST", `/api/webhooks/${id}/test`)).json();
      let nowMs = Date.now();
      const dispatcher = new Dispatcher(
        new NotificationsRepository(t.deps.database.db, t.deps.database.dialect),
        t.deps.secretBox,
        t.deps.logger,
        { telegramApiUrl: "http://127.0.0.1:9" },
        () => new Date(nowMs),
      );
      for (let attempt = 0; attempt < 20; attempt++) {
        await dispatcher.deliverDue();
        nowMs += 7 * 3_600_000;
      }
      const delivery = (await api("GET", `/api/webhooks/${id}/deliveries`))
        .json()
        .items.find((d: { id: string }) => d.id === queued.delivery_id);
      assert.deepEqual([delivery.status, delivery.attempts, delivery.last_status], ["dead", 12, 500]);
      assert.equal(hook.received.length, 12);
    } finally {
      await hook.close();
    }
  });

  test("bad webhooks are refused: not http(s), credentials in the URL, unknown events", async () => {
    for (const [payload, path] of [
      [{ name: "x1", url: "ftp://example.com/x" }, "body.url"],
      [{ name: "x2", url: "https://user:pass@example.com/x" }, "body.url"],
      [{ name: "x3", url: "https://example.com/x", events: ["user.nope"] }, "body.events"],
    ] as const) {
      const res = await api("POST", "/api/webhooks", payload);
      assert.equal(res.statusCode, 400, res.body);
      assert.ok(
        res.json().errors.some((e: { path: string }) => e.path.startsWith(path)),
        res.body,
      );
    }
  });
});

describe("Telegram", () => {
  let t: TestApp;
  /** The Bot API as documented (core.telegram.org/bots/api#sendmessage): POST /bot<token>/sendMessage. */
  const bot = {
    token: "123456:leakcheckAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    messages: [] as { chat_id: string; text: string }[],
  };
  let api: Server;
  before(async () => {
    api = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const answer = (status: number, body: object) =>
          response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
        const match = /^\/bot([^/]+)\/sendMessage$/.exec(request.url ?? "");
        if (request.method !== "POST" || match === null)
          return answer(404, { ok: false, error_code: 404, description: "Not Found" });
        if (match[1] !== bot.token)
          return answer(401, { ok: false, error_code: 401, description: "Unauthorized" });
        const body = JSON.parse(Buffer.concat(chunks).toString()) as { chat_id?: string; text?: string };
        if (typeof body.text !== "string" || body.text.length === 0) {
          return answer(400, {
            ok: false,
            error_code: 400,
            description: "Bad Request: message text is empty",
          });
        }
        if (body.chat_id === "-1000") {
          return answer(400, { ok: false, error_code: 400, description: "Bad Request: chat not found" });
        }
        bot.messages.push({ chat_id: String(body.chat_id), text: body.text });
        answer(200, {
          ok: true,
          result: {
            message_id: bot.messages.length,
            date: Math.floor(Date.now() / 1000),
            chat: { id: Number(body.chat_id), type: "private" },
            text: body.text,
          },
        });
      });
    });
    await new Promise<void>((resolve) => api.listen(0, "127.0.0.1", resolve));
    t = await createTestApp({
      PORTCULLIS_TELEGRAM_API_URL: `http://127.0.0.1:${(api.address() as AddressInfo).port}`,
    });
  });
  after(async () => {
    await t.close();
    await new Promise<void>((resolve) => api.close(() => resolve()));
  });

  test("lifecycle and server events reach the admin's chats in their language; the token is never shown", async () => {
    const saved = await t.app.inject({
      method: "PUT",
      url: "/api/auth/telegram",
      headers: t.auth,
      payload: { bot_token: bot.token, chat_ids: ["111", "222"], language: "ru" },
    });
    assert.equal(saved.statusCode, 200, saved.body);
    assert.doesNotMatch(saved.body, /leakcheck/);
    assert.doesNotMatch(
      (await t.app.inject({ url: "/api/auth/telegram", headers: t.auth })).body,
      /leakcheck/,
    );

    await t.deps.services.notifier.emit("user.limited", { user: { id: "u1", name: "Алиса" } });
    await t.deps.services.notifier.emit("user.created", { user: { id: "u2", name: "Боб" } });
    await t.deps.services.dispatcher.deliverDue();
    await waitFor(() => bot.messages.length >= 2, { timeoutMs: 10_000 });
    assert.deepEqual(bot.messages, [
      { chat_id: "111", text: "⛔ Алиса: лимит трафика исчерпан." },
      { chat_id: "222", text: "⛔ Алиса: лимит трафика исчерпан." },
    ]);
  });

  test("a chat Telegram does not know fails the delivery with Telegram's own description", async () => {
    await t.app.inject({
      method: "PUT",
      url: "/api/auth/telegram",
      headers: t.auth,
      payload: { bot_token: bot.token, chat_ids: ["-1000"], language: "en" },
    });
    await t.app.inject({ method: "POST", url: "/api/auth/telegram/test", headers: t.auth });
    await t.deps.services.dispatcher.deliverDue();
    const log = (await t.app.inject({ url: "/api/auth/telegram/deliveries", headers: t.auth })).json();
    const last = log.items[0];
    assert.equal(last.status, "pending");
    assert.equal(last.last_error, "Telegram: Bad Request: chat not found");
    assert.doesNotMatch(JSON.stringify(log), /leakcheck|\/bot/);
  });

  test("the settings change without sending the bot token again; the first setup needs it", async () => {
    const other = await createTestApp({ PORTCULLIS_TELEGRAM_API_URL: "http://127.0.0.1:9" });
    try {
      const first = await other.app.inject({
        method: "PUT",
        url: "/api/auth/telegram",
        headers: other.auth,
        payload: { chat_ids: ["111"] },
      });
      assert.equal(first.statusCode, 400);
      assert.equal(first.json().errors[0].path, "body.bot_token");
    } finally {
      await other.close();
    }
    const changed = await t.app.inject({
      method: "PUT",
      url: "/api/auth/telegram",
      headers: t.auth,
      payload: { chat_ids: ["333"], language: "zh" },
    });
    assert.equal(changed.statusCode, 200, changed.body);
    const before = bot.messages.length;
    await t.deps.services.notifier.emit("user.expired", { user: { id: "u3", name: "Carol" } });
    await t.deps.services.dispatcher.deliverDue();
    await waitFor(() => bot.messages.length > before, { timeoutMs: 10_000 });
    assert.deepEqual(bot.messages.at(-1), { chat_id: "333", text: "⌛ Carol 已过期。" });
  });
});
