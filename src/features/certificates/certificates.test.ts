// The certificates API on whichever dialect DATABASE_URL selects: self-signed generation checked by
// openssl, imports refused with the check that failed, updates, deletes and renewals under one id,
// and no response that ever carries a private key.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import {
  type KeyPairFiles,
  opensslDescribe,
  opensslEncryptedKey,
  opensslSelfSigned,
} from "../../../test/support/openssl.ts";
import { requires } from "../../../test/support/requires.ts";
import { readCertificateFacts, validateImport } from "./pem.ts";
import { generateSelfSigned } from "./self-signed.ts";

const needs = requires("openssl");

let t: TestApp;
let shop: KeyPairFiles;
let other: KeyPairFiles;
const bodiesSeen: string[] = [];

needs.before(async () => {
  t = await createTestApp();
  [shop, other] = await Promise.all([
    opensslSelfSigned("DNS:shop.portcullis.test"),
    opensslSelfSigned("DNS:other.portcullis.test"),
  ]);
});
needs.after(async () => {
  await t.close();
});

async function api(method: "GET" | "POST" | "PUT" | "DELETE", url: string, payload?: object) {
  const res = await t.app.inject({
    method,
    url,
    headers: t.auth,
    ...(payload === undefined ? {} : { payload }),
  });
  bodiesSeen.push(res.body);
  return res;
}

let sequence = 0;
function uniqueName(prefix: string): string {
  sequence += 1;
  return `${prefix}-${sequence}`;
}

async function create(payload: Record<string, unknown>) {
  const res = await api("POST", "/api/certificates", { name: uniqueName("cert"), ...payload });
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

/** The openssl-made pair for shop.portcullis.test, as a create body. */
function shopPair(certType: "self_signed" | "publicca") {
  return {
    cert_type: certType,
    domain: "shop.portcullis.test",
    certificate_pem: shop.certificatePem,
    private_key: shop.privateKeyPem,
  };
}

function opensslDate(text: string, field: "notBefore" | "notAfter"): string {
  return new Date(
    /=(.+)/.exec(text.split("\n").find((line) => line.startsWith(field)) ?? "")?.[1] ?? "",
  ).toISOString();
}

describe("self_signed with only name and domain", needs, () => {
  test("201 valid, and openssl shows the SAN and the dates the API reports", async () => {
    const cert = await create({ cert_type: "self_signed", domain: "Edge.Portcullis.test" });
    assert.equal(cert.status, "valid");
    assert.equal(cert.domain, "edge.portcullis.test");
    assert.equal(cert.auto_renew, true);
    assert.equal(cert.last_error, null);
    assert.deepEqual(cert.subject_alt_names, ["edge.portcullis.test"]);
    const text = await opensslDescribe(cert.certificate_pem);
    assert.match(text, /DNS:edge\.portcullis\.test\n/);
    assert.equal(opensslDate(text, "notBefore"), cert.not_before);
    assert.equal(opensslDate(text, "notAfter"), cert.not_after);
    assert.match(text, new RegExp(`Fingerprint=${cert.fingerprint_sha256}`));
    assert.equal(cert.issuer, "CN=edge.portcullis.test");
    assert.ok("private_key" in cert === false);
    const got = await api("GET", `/api/certificates/${cert.id}`);
    assert.deepEqual(got.json(), cert);
  });

  test("an IP address gets an IP SAN", async () => {
    const cert = await create({ cert_type: "self_signed", domain: "198.51.100.4" });
    assert.match(await opensslDescribe(cert.certificate_pem), /IP Address:198\.51\.100\.4\n/);
  });

  test("the key is stored sealed, and it is the certificate's key", async () => {
    const cert = await create({ cert_type: "self_signed", domain: "sealed.portcullis.test" });
    const row = await t.deps.database.db
      .selectFrom("certificates")
      .select("private_key_sealed")
      .where("id", "=", cert.id)
      .executeTakeFirstOrThrow();
    assert.match(row.private_key_sealed ?? "", /^v1\./);
    assert.ok(!(row.private_key_sealed ?? "").includes("PRIVATE KEY"));
    const privateKeyPem = t.deps.secretBox.open(row.private_key_sealed ?? "");
    assert.ok(
      validateImport({ certificatePem: cert.certificate_pem, privateKeyPem, domain: cert.domain }).ok,
    );
  });
});

describe("importing a PEM pair", needs, () => {
  test("an openssl-made pair is accepted as is; an imported self_signed does not auto-renew", async () => {
    const cert = await create(shopPair("self_signed"));
    assert.equal(cert.status, "valid");
    assert.equal(cert.auto_renew, false);
    assert.equal(cert.fingerprint_sha256, readCertificateFacts(shop.certificatePem).fingerprintSha256);
    assert.equal(cert.issuer, "CN=openssl test");
  });

  test("a publicca certificate can be imported too, and then auto-renews over ACME", async () => {
    const cert = await create(shopPair("publicca"));
    assert.equal(cert.status, "valid");
    assert.equal(cert.auto_renew, true);
  });

  const refusals: [string, () => Record<string, unknown>, string, string][] = [
    [
      "another certificate's key",
      () => ({ private_key: other.privateKeyPem }),
      "key_mismatch",
      "body.private_key",
    ],
    [
      "a certificate for another name",
      () => ({ domain: "www.portcullis.test" }),
      "domain_not_covered",
      "body.domain",
    ],
    [
      "garbage",
      () => ({ certificate_pem: "not a certificate" }),
      "certificate_unparseable",
      "body.certificate_pem",
    ],
  ];
  for (const [what, change, code, path] of refusals) {
    test(`${what} → 400 ${code} at ${path}`, async () => {
      const res = await api("POST", "/api/certificates", {
        name: uniqueName("bad"),
        ...shopPair("self_signed"),
        ...change(),
      });
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(res.headers["content-type"], "application/problem+json; charset=utf-8");
      assert.equal(res.json().code, code);
      assert.deepEqual(
        res.json().errors.map((e: { path: string }) => e.path),
        [path],
      );
    });
  }

  test("an encrypted key → 400 key_encrypted", async () => {
    const res = await api("POST", "/api/certificates", {
      name: uniqueName("enc"),
      ...shopPair("self_signed"),
      private_key: await opensslEncryptedKey(),
    });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().code, "key_encrypted");
  });

  test("an expired certificate → 400 certificate_expired", async () => {
    const expired = await generateSelfSigned({
      domain: "old.portcullis.test",
      validityDays: 1,
      now: new Date(Date.now() - 10 * 86_400_000),
    });
    const res = await api("POST", "/api/certificates", {
      name: uniqueName("old"),
      cert_type: "self_signed",
      domain: "old.portcullis.test",
      certificate_pem: expired.certificatePem,
      private_key: expired.privateKeyPem,
    });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().code, "certificate_expired");
    assert.match(res.json().detail, /the certificate expired at \d{4}-/);
  });

  test("half a pair, auto_renew on an imported self_signed, or a bad domain → 400 naming the field", async () => {
    const base = { cert_type: "self_signed", domain: "shop.portcullis.test" };
    const cases: [Record<string, unknown>, string][] = [
      [{ ...base, certificate_pem: shop.certificatePem }, "body.private_key"],
      [{ ...base, private_key: shop.privateKeyPem }, "body.certificate_pem"],
      [
        { ...base, certificate_pem: shop.certificatePem, private_key: shop.privateKeyPem, auto_renew: true },
        "body.auto_renew",
      ],
      [{ ...base, domain: "not a domain" }, "body.domain"],
      [{ ...base, cert_type: "letsencrypt" }, "body.cert_type"],
    ];
    for (const [payload, path] of cases) {
      const res = await api("POST", "/api/certificates", { name: uniqueName("x"), ...payload });
      assert.equal(res.statusCode, 400, JSON.stringify(payload));
      assert.equal(res.json().errors[0].path, path);
    }
  });
});

describe("updating, deleting, renewing", needs, () => {
  test("a duplicate name is 409 certificate_name_taken", async () => {
    const first = await create({ cert_type: "self_signed", domain: "dup.portcullis.test" });
    const res = await api("POST", "/api/certificates", {
      name: first.name,
      cert_type: "self_signed",
      domain: "a.test",
    });
    assert.equal(res.statusCode, 409);
    assert.equal(res.json().code, "certificate_name_taken");
  });

  test("PUT renames, switches auto_renew and replaces the pair under the same id", async () => {
    const cert = await create({ cert_type: "self_signed", domain: "shop.portcullis.test" });
    const renamed = await api("PUT", `/api/certificates/${cert.id}`, {
      name: uniqueName("renamed"),
      auto_renew: false,
    });
    assert.equal(renamed.statusCode, 200);
    assert.equal(renamed.json().auto_renew, false);
    const replaced = await api("PUT", `/api/certificates/${cert.id}`, {
      certificate_pem: shop.certificatePem,
      private_key: shop.privateKeyPem,
    });
    assert.equal(replaced.statusCode, 200, replaced.body);
    assert.equal(replaced.json().id, cert.id);
    assert.equal(
      replaced.json().fingerprint_sha256,
      readCertificateFacts(shop.certificatePem).fingerprintSha256,
    );
    const wrong = await api("PUT", `/api/certificates/${cert.id}`, {
      certificate_pem: other.certificatePem,
      private_key: other.privateKeyPem,
    });
    assert.equal(wrong.statusCode, 400);
    assert.equal(wrong.json().code, "domain_not_covered");
  });

  test("renewing a generated self_signed certificate re-generates it under the same id", async () => {
    const cert = await create({ cert_type: "self_signed", domain: "renew.portcullis.test" });
    const res = await api("POST", `/api/certificates/${cert.id}/renew`);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().id, cert.id);
    assert.notEqual(res.json().fingerprint_sha256, cert.fingerprint_sha256);
    assert.notEqual(
      readCertificateFacts(res.json().certificate_pem).serial,
      readCertificateFacts(cert.certificate_pem).serial,
    );
  });

  test("an imported self_signed certificate cannot be renewed: 409 certificate_not_renewable", async () => {
    const cert = await create(shopPair("self_signed"));
    const res = await api("POST", `/api/certificates/${cert.id}/renew`);
    assert.equal(res.statusCode, 409);
    assert.equal(res.json().code, "certificate_not_renewable");
  });

  test("DELETE is 409 certificate_in_use while a server uses it, 204 once it no longer does", async () => {
    const cert = await create({ cert_type: "self_signed", domain: "used.portcullis.test" });
    const server = await api("POST", "/api/servers", {
      name: uniqueName("edge"),
      hostname: "edge.portcullis.test",
      default_certificate_id: cert.id,
    });
    assert.equal(server.statusCode, 201, server.body);
    const refused = await api("DELETE", `/api/certificates/${cert.id}`);
    assert.equal(refused.statusCode, 409);
    assert.equal(refused.json().code, "certificate_in_use");
    assert.match(refused.json().detail, new RegExp(`in use by server ${server.json().name}`));
    const detached = await api("PUT", `/api/servers/${server.json().id}`, { default_certificate_id: null });
    assert.equal(detached.statusCode, 200, detached.body);
    assert.equal((await api("DELETE", `/api/certificates/${cert.id}`)).statusCode, 204);
  });

  test("DELETE answers 204, then the id is 404 everywhere", async () => {
    const cert = await create({ cert_type: "self_signed", domain: "gone.portcullis.test" });
    assert.equal((await api("DELETE", `/api/certificates/${cert.id}`)).statusCode, 204);
    for (const [method, url] of [
      ["GET", `/api/certificates/${cert.id}`],
      ["PUT", `/api/certificates/${cert.id}`],
      ["DELETE", `/api/certificates/${cert.id}`],
      ["POST", `/api/certificates/${cert.id}/renew`],
    ] as const) {
      const res = await api(method, url, method === "PUT" ? { name: "x" } : undefined);
      assert.equal(res.statusCode, 404, `${method} ${url}`);
    }
  });

  test("the list holds every certificate, oldest first", async () => {
    const res = await api("GET", "/api/certificates");
    assert.equal(res.statusCode, 200);
    const list = res.json() as { created_at: string }[];
    assert.ok(list.length >= 5);
    assert.deepEqual(
      list.map((c) => c.created_at),
      [...list.map((c) => c.created_at)].sort(),
    );
  });
});

describe("secrecy", needs, () => {
  test("no response body carried a private key", () => {
    assert.ok(bodiesSeen.length >= 20, `saw ${bodiesSeen.length} bodies`);
    for (const body of bodiesSeen) assert.ok(!body.includes("PRIVATE KEY"), body.slice(0, 200));
  });
});
