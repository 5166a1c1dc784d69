// Self-signed generation, judged by `openssl x509 -noout -text`: the SAN is the domain, the dates are the
// ones our facts report, the key is ECDSA P-256 unless asked otherwise, and the pair passes import checks.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { opensslDescribe } from "../../../test/support/openssl.ts";
import { requires } from "../../../test/support/requires.ts";
import { readCertificateFacts, validateImport } from "./pem.ts";
import { generateSelfSigned } from "./self-signed.ts";

const needs = requires("openssl");

const DAY_MS = 86_400_000;

function opensslDate(text: string, field: "notBefore" | "notAfter"): number {
  const value = new RegExp(`${field}=(.+)`).exec(text)?.[1];
  assert.ok(value !== undefined, `openssl printed no ${field}`);
  return Date.parse(value);
}

describe("self-signed certificates", needs, () => {
  test("with only a domain: SAN is the DNS name, P-256 key, one year, dates as reported", async () => {
    const now = new Date();
    const generated = await generateSelfSigned({ domain: "edge.portcullis.test" });
    const text = await opensslDescribe(generated.certificatePem);
    const facts = readCertificateFacts(generated.certificatePem);

    assert.match(text, /X509v3 Subject Alternative Name: *\n *DNS:edge\.portcullis\.test\n/);
    assert.match(text, /ASN1 OID: prime256v1/);
    assert.match(text, /Signature Algorithm: ecdsa-with-SHA256/);
    assert.match(text, /CA:FALSE/);
    assert.match(text, /TLS Web Server Authentication/);
    assert.equal(opensslDate(text, "notBefore"), facts.notBefore.getTime());
    assert.equal(opensslDate(text, "notAfter"), facts.notAfter.getTime());
    assert.ok(Math.abs(facts.notAfter.getTime() - now.getTime() - 365 * DAY_MS) < 60_000);
    assert.ok(facts.notBefore.getTime() <= now.getTime());
    assert.match(text, new RegExp(`serial=${facts.serial}`));
    assert.match(text, new RegExp(`Fingerprint=${facts.fingerprintSha256}`));
  });

  test("an IP address becomes an IP SAN", async () => {
    const generated = await generateSelfSigned({ domain: "203.0.113.7" });
    assert.match(await opensslDescribe(generated.certificatePem), /IP Address:203\.0\.113\.7\n/);
    assert.ok(validateImport({ ...generated, domain: "203.0.113.7" }).ok);
  });

  test("the validity period is configurable in days", async () => {
    const now = new Date("2027-03-01T12:00:00.000Z");
    const generated = await generateSelfSigned({ domain: "short.portcullis.test", validityDays: 30, now });
    const text = await opensslDescribe(generated.certificatePem);
    assert.equal(opensslDate(text, "notAfter"), now.getTime() + 30 * DAY_MS);
    await assert.rejects(generateSelfSigned({ domain: "x.test", validityDays: 0 }), RangeError);
  });

  test("the key matches the certificate, and each generation has a new key and serial", async () => {
    const first = await generateSelfSigned({ domain: "twice.portcullis.test" });
    const second = await generateSelfSigned({ domain: "twice.portcullis.test" });
    assert.ok(validateImport({ ...first, domain: "twice.portcullis.test" }).ok);
    assert.notEqual(
      readCertificateFacts(first.certificatePem).serial,
      readCertificateFacts(second.certificatePem).serial,
    );
    assert.notEqual(first.privateKeyPem, second.privateKeyPem);
  });

  test("RSA on request", async () => {
    const generated = await generateSelfSigned({ domain: "rsa.portcullis.test", keyType: "rsa-2048" });
    const text = await opensslDescribe(generated.certificatePem);
    assert.match(text, /Public-Key: \(2048 bit\)/);
    assert.match(text, /sha256WithRSAEncryption/);
    assert.ok(validateImport({ ...generated, domain: "rsa.portcullis.test" }).ok);
  });

  test("a wildcard domain is its own SAN", async () => {
    const generated = await generateSelfSigned({ domain: "*.wild.portcullis.test" });
    assert.match(await opensslDescribe(generated.certificatePem), /DNS:\*\.wild\.portcullis\.test\n/);
  });

  test("something that is no name is refused", async () => {
    await assert.rejects(generateSelfSigned({ domain: "not a name" }), RangeError);
  });
});
