// /api/import (issue 51): the dashboard's import, on whichever dialect DATABASE_URL selects, with the
// Marzban and 3x-ui fixtures (test/support/peer-fixtures.ts) and a real V2Ray core as the server. A
// dry run reports what `portcullis import --json` reports and writes nothing; an import reports the
// fixture's counts (from its rows) and writes them; a second run changes nothing; a second start
// while one runs is a 409; bad uploads, URLs, kinds and servers are 400/404 problems; non-owners are
// refused; a URL's password is in no answer and no log line; a restart marks an unfinished job failed.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import {
  MARZBAN_INBOUNDS,
  marzbanXrayConfig,
  writeMarzbanSqlite,
  writeXuiSqlite,
} from "../../../test/support/peer-fixtures.ts";
import { waitFor } from "../../../test/support/poll.ts";
import { registerServer } from "../../../test/support/provisioning.ts";
import { requires } from "../../../test/support/requires.ts";
import { CleanupStack, startV2rayServer, tempDir } from "../../../test/support/v2ray.ts";
import { run } from "../../cli/import.ts";
import { loadSqlite } from "../../db/connection.ts";
import type { ImportReport } from "./import.service.ts";
import type { ImportJob } from "./import-jobs.service.ts";

const needs = requires("v2ray");
const N = 400;
const PASSWORD = "Pw-51-never-shown";
const stack = new CleanupStack();
let t: TestApp;
let serverId: string;
let marzbanPath: string;
let xuiPath: string;
let xuiClients: number;
let operatorToken: string;
const xrayConfig = marzbanXrayConfig();

needs.before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "5000" });
  const core = await startV2rayServer(stack.add);
  serverId = (await registerServer(t, core.apiPort)).id;
  const dir = tempDir(stack.add);
  marzbanPath = join(dir, "db.sqlite3");
  writeMarzbanSqlite(marzbanPath, N);
  xuiPath = join(dir, "x-ui.db");
  xuiClients = writeXuiSqlite(xuiPath, 200).clients;
  const created = await t.app.inject({
    method: "POST",
    url: "/api/admins",
    headers: t.auth,
    payload: { username: "importer-operator", password: "operator password 51", role: "operator" },
  });
  assert.equal(created.statusCode, 201, created.body);
  const login = await t.app.inject({
    method: "POST",
    url: "/api/auth/token",
    payload: { username: "importer-operator", password: "operator password 51" },
  });
  operatorToken = login.json().access_token as string;
});
needs.after(async () => {
  await t.close();
  await stack.run();
});

async function upload(path: string, headers: Record<string, string> = t.auth): Promise<string> {
  const res = await t.app.inject({
    method: "POST",
    url: "/api/import/uploads",
    headers: { ...headers, "content-type": "application/octet-stream" },
    payload: readFileSync(path),
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().id as string;
}

async function start(body: Record<string, unknown>) {
  return t.app.inject({ method: "POST", url: "/api/import/jobs", headers: t.auth, payload: body });
}

async function finished(): Promise<ImportJob> {
  return waitFor(
    async () => {
      const res = await t.app.inject({ method: "GET", url: "/api/import/job", headers: t.auth });
      assert.equal(res.statusCode, 200, res.body);
      const job = res.json() as ImportJob;
      return job.state === "running" ? undefined : job;
    },
    { timeoutMs: 180_000, intervalMs: 100, what: "the import job to end" },
  );
}

let lastUpload = "";

async function importMarzban(dryRun: boolean): Promise<ImportJob> {
  const id = await upload(marzbanPath);
  lastUpload = id;
  const res = await start({
    kind: "marzban",
    server_id: serverId,
    dry_run: dryRun,
    upload_id: id,
    xray_config: xrayConfig,
  });
  assert.equal(res.statusCode, 202, res.body);
  assert.equal(res.json().state, "running");
  const job = await finished();
  assert.equal(job.state, "done", JSON.stringify(job.error));
  return job;
}

/** Source rows, counted in the fixture's file itself. */
function sourceCount(path: string, sql: string): number {
  const db = new (loadSqlite())(path, { readonly: true });
  try {
    return Number((db.prepare(sql).get() as { n: number }).n);
  } finally {
    db.close();
  }
}

async function count(table: "users" | "server_inbounds" | "import_links" | "admins"): Promise<number> {
  const row = await t.deps.database.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number | string>().as("n"))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

const withoutDuration = (report: ImportReport) => ({ ...report, duration_ms: 0 });

describe("/api/import", needs, () => {
  test("a non-owner is refused on every import route", async () => {
    const headers = { authorization: `Bearer ${operatorToken}` };
    const uploaded = await t.app.inject({
      method: "POST",
      url: "/api/import/uploads",
      headers: { ...headers, "content-type": "application/octet-stream" },
      payload: readFileSync(marzbanPath),
    });
    assert.equal(uploaded.statusCode, 403, uploaded.body);
    const started = await t.app.inject({
      method: "POST",
      url: "/api/import/jobs",
      headers,
      payload: { kind: "marzban", upload_id: randomUUID() },
    });
    assert.equal(started.statusCode, 403, started.body);
    const job = await t.app.inject({ method: "GET", url: "/api/import/job", headers });
    assert.equal(job.statusCode, 403, job.body);
    assert.equal(job.headers["content-type"], "application/problem+json; charset=utf-8");
  });

  test("before any job, GET is a 404 problem", async () => {
    const res = await t.app.inject({ method: "GET", url: "/api/import/job", headers: t.auth });
    assert.equal(res.statusCode, 404, res.body);
    assert.equal(res.json().code, "not_found");
  });

  test("a dry run reports what the CLI reports and writes nothing", async () => {
    const users = await count("users");
    const inbounds = await count("server_inbounds");
    const job = await importMarzban(true);
    assert.equal(await count("users"), users);
    assert.equal(await count("server_inbounds"), inbounds);
    assert.equal(await count("import_links"), 0);
    assert.ok(job.report !== null);
    assert.equal(job.report.dry_run, true);
    assert.equal(job.report.users.found, sourceCount(marzbanPath, "SELECT count(*) AS n FROM users"));
    assert.equal(job.progress.total, job.report.users.found);
    assert.equal(job.progress.done, job.progress.total);
    assert.equal(job.source, "upload");

    const configPath = join(tempDir(stack.add), "xray_config.json");
    writeFileSync(configPath, JSON.stringify(xrayConfig));
    let out = "";
    const code = await run(
      [
        "marzban",
        "--db",
        marzbanPath,
        "--xray-config",
        configPath,
        "--server",
        serverId,
        "--dry-run",
        "--json",
      ],
      { deps: t.deps, write: (text) => (out += text), writeError: () => {} },
    );
    assert.equal(code, 0);
    assert.deepEqual(withoutDuration(job.report), withoutDuration(JSON.parse(out) as ImportReport));
  });

  test("a second start while one runs is a 409 problem", async () => {
    const importer = t.deps.services.importer;
    const real = importer.run.bind(importer);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    importer.run = async (...args) => {
      await gate;
      return real(...args);
    };
    try {
      const id = await upload(marzbanPath);
      const first = await start({ kind: "marzban", dry_run: true, upload_id: id });
      assert.equal(first.statusCode, 202, first.body);
      const second = await start({ kind: "marzban", dry_run: true, upload_id: id });
      assert.equal(second.statusCode, 409, second.body);
      assert.equal(second.json().code, "import_running");
      const uploadDuring = await t.app.inject({
        method: "POST",
        url: "/api/import/uploads",
        headers: { ...t.auth, "content-type": "application/octet-stream" },
        payload: readFileSync(marzbanPath),
      });
      assert.equal(uploadDuring.statusCode, 409, uploadDuring.body);
    } finally {
      open();
      importer.run = real;
    }
    assert.equal((await finished()).state, "done");
  });

  test("an import reports the fixture's counts, and a second run changes nothing", async () => {
    const users = await count("users");
    const job = await importMarzban(false);
    assert.ok(job.report !== null);
    const found = sourceCount(marzbanPath, "SELECT count(*) AS n FROM users");
    assert.equal(job.report.dry_run, false);
    assert.equal(job.report.users.found, found);
    assert.equal(job.report.users.created, found);
    assert.equal(job.report.inbounds.created, MARZBAN_INBOUNDS.length);
    assert.equal(job.report.admins.found, sourceCount(marzbanPath, "SELECT count(*) AS n FROM admins"));
    assert.equal(await count("users"), users + found);
    assert.equal(job.progress.done, found);

    // The upload is gone once a real import of it ended.
    const reused = await start({ kind: "marzban", upload_id: lastUpload });
    assert.equal(reused.statusCode, 400, reused.body);

    const again = await importMarzban(false);
    assert.ok(again.report !== null);
    assert.equal(again.report.users.created, 0);
    assert.equal(again.report.users.already, found);
    assert.equal(again.report.inbounds.created, 0);
    assert.equal(again.report.inbounds.already, MARZBAN_INBOUNDS.length);
    assert.equal(await count("users"), users + found);
  });

  test("a 3x-ui upload imports as 3x-ui", async () => {
    const id = await upload(xuiPath);
    const res = await start({ kind: "3x-ui", server_id: serverId, dry_run: true, upload_id: id });
    assert.equal(res.statusCode, 202, res.body);
    const job = await finished();
    assert.equal(job.state, "done", JSON.stringify(job.error));
    assert.equal(job.kind, "3x-ui");
    assert.equal(job.report?.users.found, xuiClients);
  });

  test("bad uploads, URLs, kinds and servers are 400/404/413/415 problems", async () => {
    const notSqlite = await t.app.inject({
      method: "POST",
      url: "/api/import/uploads",
      headers: { ...t.auth, "content-type": "application/octet-stream" },
      payload: Buffer.from("this is not a database at all, just some text"),
    });
    assert.equal(notSqlite.statusCode, 400, notSqlite.body);
    assert.equal(notSqlite.headers["content-type"], "application/problem+json; charset=utf-8");

    const json = await t.app.inject({
      method: "POST",
      url: "/api/import/uploads",
      headers: t.auth,
      payload: { file: "x" },
    });
    assert.equal(json.statusCode, 415, json.body);

    const jobs = t.deps.services.importJobs;
    const cap = jobs.maxUploadBytes;
    jobs.maxUploadBytes = 1024;
    try {
      const big = await t.app.inject({
        method: "POST",
        url: "/api/import/uploads",
        headers: { ...t.auth, "content-type": "application/octet-stream" },
        payload: readFileSync(marzbanPath),
      });
      assert.equal(big.statusCode, 413, big.body);
      assert.equal(big.json().code, "payload_too_large");
    } finally {
      jobs.maxUploadBytes = cap;
    }

    const marzbanUpload = await upload(marzbanPath);
    const wrongKind = await start({ kind: "3x-ui", upload_id: marzbanUpload });
    assert.equal(wrongKind.statusCode, 400, wrongKind.body);
    assert.match(wrongKind.json().detail, /not a 3x-ui database/);
    assert.doesNotMatch(wrongKind.body, /import-uploads/);

    const unknownKind = await start({ kind: "remnawave", upload_id: marzbanUpload });
    assert.equal(unknownKind.statusCode, 400, unknownKind.body);

    const unknownServer = await start({ kind: "marzban", server_id: randomUUID(), upload_id: marzbanUpload });
    assert.equal(unknownServer.statusCode, 404, unknownServer.body);

    const unknownUpload = await start({ kind: "marzban", upload_id: randomUUID() });
    assert.equal(unknownUpload.statusCode, 400, unknownUpload.body);

    const both = await start({ kind: "marzban", upload_id: marzbanUpload, url: "postgres://x@127.0.0.1/db" });
    assert.equal(both.statusCode, 400, both.body);

    for (const url of ["http://127.0.0.1/db", "/etc/passwd", "sqlite:/etc/passwd"]) {
      const res = await start({ kind: "marzban", url });
      assert.equal(res.statusCode, 400, `${url}: ${res.body}`);
    }

    // Nothing listens on port 1: a quick refusal, answered without the password.
    for (const url of [
      `postgres://root:${PASSWORD}@127.0.0.1:1/marzban`,
      `mysql://root:${encodeURIComponent(PASSWORD)}@127.0.0.1:1/marzban`,
    ]) {
      const res = await start({ kind: "marzban", url });
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(res.json().code, "validation_failed");
      assert.match(res.json().detail, /root:\*\*\*@127\.0\.0\.1:1/);
      assert.ok(!res.body.includes(PASSWORD), res.body);
    }
  });

  test("a URL source's password is in no answer and no log line", async () => {
    // A real PostgreSQL answers with a wrong password: the error comes from the server itself.
    const pgUrl = process.env.DATABASE_URL;
    if (pgUrl !== undefined && /^postgres/.test(pgUrl)) {
      const url = new URL(pgUrl);
      url.username = "nobody_51";
      url.password = PASSWORD;
      const res = await start({ kind: "marzban", url: url.toString() });
      assert.equal(res.statusCode, 400, res.body);
      assert.ok(!res.body.includes(PASSWORD), res.body);
      const job = await t.app.inject({ method: "GET", url: "/api/import/job", headers: t.auth });
      assert.ok(!job.body.includes(PASSWORD), job.body);
    }
    const dir = process.env.PORTCULLIS_TEST_LOG_DIR ?? join(tmpdir(), "portcullis-test-logs");
    const mine = readdirSync(dir).filter((name) => name.startsWith(`${process.pid}-`));
    assert.ok(mine.length > 0, "this process's log files");
    const logs = mine.map((name) => readFileSync(join(dir, name), "utf8")).join("");
    assert.ok(logs.includes("/api/import/jobs"), "the import requests were logged");
    assert.ok(!logs.includes(PASSWORD));
    assert.ok(!logs.includes(encodeURIComponent(PASSWORD)));
  });

  test("a restart marks an unfinished job failed", async () => {
    const jobFile = join(t.deps.config.dataDir, "import-job.json");
    const last = JSON.parse(readFileSync(jobFile, "utf8")) as ImportJob;
    writeFileSync(jobFile, JSON.stringify({ ...last, state: "running", report: null, finished_at: null }));
    const restarted = await createTestApp({}, { sameDatabaseAs: t });
    try {
      const res = await restarted.app.inject({ method: "GET", url: "/api/import/job", headers: t.auth });
      assert.equal(res.statusCode, 200, res.body);
      const job = res.json() as ImportJob;
      assert.equal(job.id, last.id);
      assert.equal(job.state, "failed");
      assert.match(job.error?.detail ?? "", /start it again/);
      assert.ok(job.finished_at !== null);
    } finally {
      await restarted.close();
    }
  });
});
