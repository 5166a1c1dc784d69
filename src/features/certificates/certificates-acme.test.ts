// publicca through the API against Debian's pebble (EAB required, real http-01 and dns-01): the record
// goes pending → valid, the chain verifies against pebble's root, a forced renewal brings a new serial
// under the same id, and a wrong EAB key ends in failed with a readable last_error while the service
// keeps answering.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { opensslVerifyChain } from "../../../test/support/openssl.ts";
import { PEBBLE_EAB, type Pebble, startPebble, WRONG_EAB_HMAC_KEY } from "../../../test/support/pebble.ts";
import { waitFor } from "../../../test/support/poll.ts";
import { freePorts } from "../../../test/support/ports.ts";
import { requires } from "../../../test/support/requires.ts";
import { readCertificateFacts } from "./pem.ts";

const needs = requires("pebble", "pebble-challtestsrv", "openssl");

const HOOK_SCRIPT = fileURLToPath(
  new URL("../../../test/support/challtestsrv-dns-hook.mjs", import.meta.url),
);

type CertificateBody = {
  id: string;
  status: string;
  certificate_pem: string | null;
  fingerprint_sha256: string | null;
  subject_alt_names: string[];
  last_error: string | null;
  not_after: string | null;
};

let pebble: Pebble;
let t: TestApp;
let wrongEab: TestApp;

function acmeEnv(http01Port: number, hmacKey: string): Record<string, string> {
  return {
    PORTCULLIS_ACME_DIRECTORY_URL: pebble.directoryUrl,
    PORTCULLIS_ACME_EAB_KID: PEBBLE_EAB.kid,
    PORTCULLIS_ACME_EAB_HMAC_KEY: hmacKey,
    PORTCULLIS_ACME_CA_FILE: pebble.listenerCaFile,
    PORTCULLIS_ACME_HTTP01_HOST: "127.0.0.1",
    PORTCULLIS_ACME_HTTP01_PORT: String(http01Port),
    PORTCULLIS_ACME_DNS01_HOOK: HOOK_SCRIPT,
  };
}

needs.before(async () => {
  const [http01Port, otherPort] = await freePorts(2);
  pebble = await startPebble({ httpPort: http01Port ?? 0 });
  // The dns-01 hook inherits Portcullis's environment; this is how it finds challtestsrv.
  process.env.CHALLTESTSRV_URL = pebble.challtestsrvUrl;
  t = await createTestApp(acmeEnv(http01Port ?? 0, PEBBLE_EAB.hmacKey));
  wrongEab = await createTestApp(acmeEnv(otherPort ?? 0, WRONG_EAB_HMAC_KEY));
});
needs.after(async () => {
  await t?.close();
  await wrongEab?.close();
  await pebble?.stop();
});

async function get(app: TestApp, id: string): Promise<CertificateBody> {
  const res = await app.app.inject({ url: `/api/certificates/${id}`, headers: app.auth });
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as CertificateBody;
}

async function order(app: TestApp, domain: string): Promise<CertificateBody> {
  const res = await app.app.inject({
    method: "POST",
    url: "/api/certificates",
    headers: app.auth,
    payload: { name: `acme-${domain}`, cert_type: "publicca", domain },
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json() as CertificateBody;
}

function settled(app: TestApp, id: string, isDone: (cert: CertificateBody) => boolean) {
  return waitFor(
    async () => {
      const cert = await get(app, id);
      return isDone(cert) ? cert : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 50, what: `certificate ${id}` },
  );
}

describe("publicca against pebble", { ...needs, timeout: 180_000 }, () => {
  test("POST answers 201 pending; the record becomes valid with a chain that verifies", async () => {
    const created = await order(t, "api.portcullis.test");
    assert.equal(created.status, "pending");
    assert.equal(created.certificate_pem, null);
    const cert = await settled(t, created.id, (c) => c.status !== "pending");
    assert.equal(cert.status, "valid", cert.last_error ?? "");
    assert.deepEqual(cert.subject_alt_names, ["api.portcullis.test"]);
    assert.match(
      await opensslVerifyChain(cert.certificate_pem ?? "", await pebble.rootPem()),
      /leaf\.pem: OK/,
    );
  });

  test("a forced renewal answers 202 and brings a new serial under the same id", async () => {
    const created = await order(t, "renew.portcullis.test");
    const first = await settled(t, created.id, (c) => c.status !== "pending");
    assert.equal(first.status, "valid", first.last_error ?? "");
    const res = await t.app.inject({
      method: "POST",
      url: `/api/certificates/${first.id}/renew`,
      headers: t.auth,
    });
    assert.equal(res.statusCode, 202, res.body);
    assert.equal(res.json().status, "valid");
    const renewed = await settled(t, first.id, (c) => c.fingerprint_sha256 !== first.fingerprint_sha256);
    assert.equal(renewed.id, first.id);
    assert.equal(renewed.last_error, null);
    assert.notEqual(
      readCertificateFacts(renewed.certificate_pem ?? "").serial,
      readCertificateFacts(first.certificate_pem ?? "").serial,
    );
    assert.match(await opensslVerifyChain(renewed.certificate_pem ?? "", await pebble.rootPem()), /OK/);
  });

  test("a wildcard is issued over dns-01 through the configured hook", async () => {
    const created = await order(t, "*.wild.portcullis.test");
    const cert = await settled(t, created.id, (c) => c.status !== "pending");
    assert.equal(cert.status, "valid", cert.last_error ?? "");
    assert.deepEqual(cert.subject_alt_names, ["*.wild.portcullis.test"]);
  });

  test("a wrong EAB key ends in failed with a readable last_error, and the service keeps running", async () => {
    const created = await order(wrongEab, "eab.portcullis.test");
    const cert = await settled(wrongEab, created.id, (c) => c.status !== "pending");
    assert.equal(cert.status, "failed");
    assert.match(
      cert.last_error ?? "",
      /registering the ACME account: external account binding JWS verification error/,
    );
    assert.ok(!(cert.last_error ?? "").includes(WRONG_EAB_HMAC_KEY));
    assert.ok(!(cert.last_error ?? "").includes("PRIVATE KEY"));
    const health = await wrongEab.app.inject({ url: "/health" });
    assert.equal(health.statusCode, 200);
    const list = await wrongEab.app.inject({ url: "/api/certificates", headers: wrongEab.auth });
    assert.equal(list.statusCode, 200);
  });
});
