// Renewal with a controlled clock and a stand-in CA: due at two thirds of the lifetime, backoff after
// failures, one renewal per certificate at a time (also across two service instances on one database),
// and the job that drives it.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp, testLogger } from "../../../test/support/app.ts";
import { waitFor } from "../../../test/support/poll.ts";
import { renewCertificatesJob } from "../../jobs/renew-certificates.ts";
import { ConflictError } from "../../lib/errors.ts";
import { EventBus } from "../../lib/events.ts";
import type { CertificateAuthority, IssuedMaterial } from "./acme-issuer.ts";
import { CertificatesRepository } from "./certificates.repository.ts";
import { CertificatesService } from "./certificates.service.ts";
import { generateSelfSigned } from "./self-signed.ts";

const DAY_MS = 86_400_000;
const MINUTE_MS = 60_000;

/** A CA that fails or succeeds on command, optionally holding each issuance until released. */
class StandInCa implements CertificateAuthority {
  isFailing = false;
  calls = 0;
  #gate: Promise<void> = Promise.resolve();
  #open: () => void = () => undefined;

  hold(): void {
    this.#gate = new Promise((resolve) => {
      this.#open = resolve;
    });
  }

  release(): void {
    this.#open();
  }

  async issue(domain: string): Promise<IssuedMaterial> {
    this.calls += 1;
    await this.#gate;
    if (this.isFailing) throw new Error("connect ECONNREFUSED 192.0.2.1:443 (the stand-in CA is down)");
    return generateSelfSigned({ domain, validityDays: 90 });
  }

  async close(): Promise<void> {}
}

let t: TestApp;
let clock: Date;
const ca = new StandInCa();
let service: CertificatesService;

function makeService(): CertificatesService {
  const repository = new CertificatesRepository(t.deps.database.db);
  const settings = { selfSignedValidityDays: 3 };
  const events = new EventBus();
  return new CertificatesService(
    repository,
    t.deps.secretBox,
    ca,
    settings,
    events,
    testLogger(),
    () => clock,
  );
}

function later(ms: number): Date {
  return new Date(clock.getTime() + ms);
}

before(async () => {
  t = await createTestApp();
  clock = new Date();
  service = makeService();
});
after(async () => {
  await service.close();
  await t.close();
});

const never = new AbortController().signal;

describe("renewal when due", () => {
  test("a self-signed certificate is re-generated after two thirds of its lifetime, keeping its id", async () => {
    const cert = await service.create({
      name: "due-self",
      cert_type: "self_signed",
      domain: "due.portcullis.test",
    });
    clock = later(1.9 * DAY_MS);
    await service.renewDue(never);
    assert.equal(
      (await service.get(cert.id)).fingerprint_sha256,
      cert.fingerprint_sha256,
      "not due at 1.9 of 3 days",
    );
    clock = later(0.2 * DAY_MS);
    assert.equal((await service.get(cert.id)).status, "expiring");
    await service.renewDue(never);
    const renewed = await service.get(cert.id);
    assert.notEqual(renewed.fingerprint_sha256, cert.fingerprint_sha256);
    assert.equal(renewed.id, cert.id);
    assert.equal(renewed.status, "valid");
    assert.equal(
      renewed.not_before,
      new Date(Math.floor(clock.getTime() / 1000) * 1000 - 5 * MINUTE_MS).toISOString(),
    );
    await service.delete(cert.id);
  });

  test("auto_renew off: never renewed, even when expired", async () => {
    const cert = await service.create({
      name: "manual-self",
      cert_type: "self_signed",
      domain: "manual.portcullis.test",
      auto_renew: false,
    });
    clock = later(4 * DAY_MS);
    await service.renewDue(never);
    const after = await service.get(cert.id);
    assert.equal(after.status, "expired");
    assert.equal(after.fingerprint_sha256, cert.fingerprint_sha256);
    await service.delete(cert.id);
  });
});

describe("failures and backoff", () => {
  test("a failed first issuance is failed with last_error, then retried after 5 min, then 10 min", async () => {
    ca.isFailing = true;
    const cert = await service.create({
      name: "flaky",
      cert_type: "publicca",
      domain: "flaky.portcullis.test",
    });
    assert.equal(cert.status, "pending");
    const failed = await waitFor(async () => {
      const current = await service.get(cert.id);
      return current.status === "failed" ? current : undefined;
    });
    assert.match(failed.last_error ?? "", /ECONNREFUSED/);
    const callsAfterFirst = ca.calls;

    clock = later(4 * MINUTE_MS);
    assert.equal((await service.renewDue(never)).failed, 0, "backing off for 5 min");
    clock = later(1 * MINUTE_MS);
    assert.equal((await service.renewDue(never)).failed, 1, "retried after 5 min");
    clock = later(9 * MINUTE_MS);
    assert.equal((await service.renewDue(never)).failed, 0, "backing off for 10 min");
    assert.equal(ca.calls, callsAfterFirst + 1);

    ca.isFailing = false;
    clock = later(1 * MINUTE_MS);
    assert.equal((await service.renewDue(never)).renewed, 1);
    const issued = await service.get(cert.id);
    assert.equal(issued.status, "valid");
    assert.equal(issued.last_error, null);
    await service.delete(cert.id);
  });

  test("a failed renewal of a valid certificate keeps it valid and records why", async () => {
    const cert = await service.create({
      name: "keeps",
      cert_type: "publicca",
      domain: "keeps.portcullis.test",
    });
    const valid = await waitFor(async () => {
      const current = await service.get(cert.id);
      return current.status === "valid" ? current : undefined;
    });
    ca.isFailing = true;
    await waitFor(async () => (await service.renew(cert.id)).certificate.id === cert.id).catch(
      () => undefined,
    );
    const failedRenewal = await waitFor(async () => {
      const current = await service.get(cert.id);
      return current.last_error === null ? undefined : current;
    });
    assert.equal(failedRenewal.status, "valid");
    assert.equal(failedRenewal.fingerprint_sha256, valid.fingerprint_sha256);
    ca.isFailing = false;
    await service.delete(cert.id);
  });
});

describe("one renewal per certificate at a time", () => {
  test("a second renew while one runs is 409, in this instance and in another one", async () => {
    const cert = await service.create({
      name: "single",
      cert_type: "publicca",
      domain: "single.portcullis.test",
    });
    await waitFor(async () => (await service.get(cert.id)).status === "valid");
    clock = later(61 * DAY_MS); // due (2/3 of 90 days), and the lease taken below is fresh
    ca.hold();
    const callsBefore = ca.calls;
    const started = await service.renew(cert.id);
    assert.equal(started.isFinished, false);
    // The renewal claims the lease before it calls the CA: wait for the call, or the other instance
    // below may claim the lease first (both use one pool) and then wait on the held CA for ever.
    await waitFor(() => ca.calls === callsBefore + 1, {
      what: "the renewal to hold the lease and call the CA",
    });
    await assert.rejects(service.renew(cert.id), (error) => error instanceof ConflictError);

    const otherInstance = makeService();
    const counts = await otherInstance.renewDue(never);
    assert.equal(counts.busy, 1, "the database lease stops the other instance");
    assert.equal(ca.calls, callsBefore + 1);

    ca.release();
    await waitFor(async () => !(await isLeased(cert.id)), { what: "the renewal to finish" });
    assert.equal((await otherInstance.renewDue(never)).renewed, 1, "the lease is free again");
    await otherInstance.close();
    await service.delete(cert.id);
  });
});

describe("the renewal job", () => {
  test("runs the service's pass under its name and interval", async () => {
    const cert = await service.create({
      name: "job",
      cert_type: "self_signed",
      domain: "job.portcullis.test",
    });
    const job = renewCertificatesJob(service, testLogger());
    assert.equal(job.name, "renew-certificates");
    assert.equal(job.intervalMs, 5 * MINUTE_MS);
    clock = later(2.5 * DAY_MS);
    await job.run({ signal: never });
    assert.notEqual((await service.get(cert.id)).fingerprint_sha256, cert.fingerprint_sha256);
    await service.delete(cert.id);
  });
});

async function isLeased(id: string): Promise<boolean> {
  const row = await t.deps.database.db
    .selectFrom("certificates")
    .select("renewing_since")
    .where("id", "=", id)
    .executeTakeFirstOrThrow();
  return row.renewing_since !== null;
}
