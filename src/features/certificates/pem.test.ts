// Importing a certificate: openssl makes the pairs, our checks must accept the good one and refuse each
// broken one with the stable problem code, in words that never carry the key.
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, test } from "node:test";
import {
  inTempDir,
  type KeyPairFiles,
  openssl,
  opensslDescribe,
  opensslEncryptedKey,
  opensslSelfSigned,
} from "../../../test/support/openssl.ts";
import { requires } from "../../../test/support/requires.ts";
import { type ImportInput, type ImportProblemCode, readCertificateFacts, validateImport } from "./pem.ts";

const needs = requires("openssl");

let shop: KeyPairFiles;
let other: KeyPairFiles;
let wildcard: KeyPairFiles;
let addresses: KeyPairFiles;
let rsaKeyPem: string;
let encryptedKeyPem: string;
const messagesSeen: string[] = [];

needs.before(async () => {
  [shop, other, wildcard, addresses] = await Promise.all([
    opensslSelfSigned("DNS:shop.portcullis.test,DNS:www.shop.portcullis.test"),
    opensslSelfSigned("DNS:other.portcullis.test"),
    opensslSelfSigned("DNS:*.portcullis.test"),
    opensslSelfSigned("IP:192.0.2.10,IP:2001:db8::1"),
  ]);
  rsaKeyPem = await openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]);
  encryptedKeyPem = await opensslEncryptedKey();
});

function problemCodes(input: ImportInput): ImportProblemCode[] {
  const result = validateImport(input);
  if (result.ok) return [];
  messagesSeen.push(...result.problems.map((problem) => problem.message));
  return result.problems.map((problem) => problem.code);
}

describe("importing an openssl-made pair", needs, () => {
  test("a matching pair for the domain is accepted with the facts openssl reports", async () => {
    const result = validateImport({ ...shop, domain: "shop.portcullis.test" });
    assert.ok(result.ok, JSON.stringify(result));
    const text = await opensslDescribe(result.certificatePem);
    assert.match(text, new RegExp(`sha256 Fingerprint=${result.facts.fingerprintSha256}`));
    assert.match(text, new RegExp(`serial=${result.facts.serial}`));
    assert.equal(result.facts.notAfter.getTime(), Date.parse(/notAfter=(.+)/.exec(text)?.[1] ?? ""));
    assert.equal(result.facts.notBefore.getTime(), Date.parse(/notBefore=(.+)/.exec(text)?.[1] ?? ""));
    assert.deepEqual(result.facts.subjectAltNames, ["shop.portcullis.test", "www.shop.portcullis.test"]);
    assert.equal(result.facts.issuer, "CN=openssl test");
    assert.match(result.privateKeyPem, /^-----BEGIN PRIVATE KEY-----\n/);
  });

  test("the second SAN, any letter case and a trailing dot all count as covered", () => {
    assert.deepEqual(problemCodes({ ...shop, domain: "WWW.Shop.portcullis.test." }), []);
  });

  test("a traditional 'EC PRIVATE KEY' is accepted and stored as PKCS#8", async () => {
    const traditional = await convertToSec1(shop.privateKeyPem);
    assert.match(traditional, /BEGIN EC PRIVATE KEY/);
    const result = validateImport({ ...shop, privateKeyPem: traditional, domain: "shop.portcullis.test" });
    assert.ok(result.ok);
    assert.match(result.privateKeyPem, /^-----BEGIN PRIVATE KEY-----\n/);
  });

  test("a chain keeps every certificate, leaf first", () => {
    const result = validateImport({
      certificatePem: shop.certificatePem + other.certificatePem,
      privateKeyPem: shop.privateKeyPem,
      domain: "shop.portcullis.test",
    });
    assert.ok(result.ok);
    assert.equal(result.certificatePem.match(/BEGIN CERTIFICATE/g)?.length, 2);
    assert.deepEqual(result.facts.subjectAltNames, ["shop.portcullis.test", "www.shop.portcullis.test"]);
  });
});

describe("refusing a broken import", needs, () => {
  test("another certificate's key → key_mismatch", () => {
    const codes = problemCodes({
      certificatePem: shop.certificatePem,
      privateKeyPem: other.privateKeyPem,
      domain: "shop.portcullis.test",
    });
    assert.deepEqual(codes, ["key_mismatch"]);
  });

  test("an RSA key for an EC certificate → key_mismatch", () => {
    const codes = problemCodes({ ...shop, privateKeyPem: rsaKeyPem, domain: "shop.portcullis.test" });
    assert.deepEqual(codes, ["key_mismatch"]);
  });

  test("a certificate for another name → domain_not_covered, naming both", () => {
    const result = validateImport({ ...other, domain: "shop.portcullis.test" });
    assert.ok(!result.ok);
    assert.deepEqual(result.problems, [
      {
        code: "domain_not_covered",
        message: "the certificate is for other.portcullis.test, not shop.portcullis.test",
      },
    ]);
  });

  test("a passphrase-protected key → key_encrypted", () => {
    assert.deepEqual(
      problemCodes({ ...shop, privateKeyPem: encryptedKeyPem, domain: "shop.portcullis.test" }),
      ["key_encrypted"],
    );
  });

  test("garbage in both fields → certificate_unparseable and key_unparseable", () => {
    const codes = problemCodes({
      certificatePem: "hello",
      privateKeyPem: "world",
      domain: "shop.portcullis.test",
    });
    assert.deepEqual(codes, ["certificate_unparseable", "key_unparseable"]);
  });

  test("a PEM block with a corrupt body → certificate_unparseable", () => {
    const corrupt = shop.certificatePem.replace(/\n[A-Za-z0-9+/]{20}/, "\nAAAAAAAAAAAAAAAAAAAA");
    assert.deepEqual(problemCodes({ ...shop, certificatePem: corrupt, domain: "shop.portcullis.test" }), [
      "certificate_unparseable",
    ]);
  });

  test("a key pasted into certificate_pem → certificate_unparseable, without echoing it", () => {
    const codes = problemCodes({
      ...shop,
      certificatePem: shop.privateKeyPem,
      domain: "shop.portcullis.test",
    });
    assert.deepEqual(codes, ["certificate_unparseable"]);
  });

  test("an expired certificate → certificate_expired", () => {
    const later = new Date(Date.now() + 31 * 86_400_000);
    assert.deepEqual(problemCodes({ ...shop, domain: "shop.portcullis.test", now: later }), [
      "certificate_expired",
    ]);
  });

  test("every failed check is reported at once", () => {
    const later = new Date(Date.now() + 31 * 86_400_000);
    const input = { certificatePem: other.certificatePem, privateKeyPem: shop.privateKeyPem, now: later };
    assert.deepEqual(problemCodes({ ...input, domain: "shop.portcullis.test" }), [
      "domain_not_covered",
      "certificate_expired",
      "key_mismatch",
    ]);
  });
});

describe("what a certificate covers", needs, () => {
  test("a wildcard covers one label below it, not the apex or two labels", () => {
    assert.deepEqual(problemCodes({ ...wildcard, domain: "api.portcullis.test" }), []);
    assert.deepEqual(problemCodes({ ...wildcard, domain: "*.portcullis.test" }), []);
    assert.deepEqual(problemCodes({ ...wildcard, domain: "portcullis.test" }), ["domain_not_covered"]);
    assert.deepEqual(problemCodes({ ...wildcard, domain: "a.b.portcullis.test" }), ["domain_not_covered"]);
  });

  test("IP SANs cover their addresses, IPv6 in any spelling", () => {
    assert.deepEqual(problemCodes({ ...addresses, domain: "192.0.2.10" }), []);
    assert.deepEqual(problemCodes({ ...addresses, domain: "2001:DB8:0::1" }), []);
    assert.deepEqual(problemCodes({ ...addresses, domain: "192.0.2.11" }), ["domain_not_covered"]);
    assert.deepEqual(readCertificateFacts(addresses.certificatePem).subjectAltNames, [
      "192.0.2.10",
      "2001:db8::1",
    ]);
  });
});

describe("secrecy", needs, () => {
  test("no problem message contains a private key or any line of one", () => {
    assert.ok(messagesSeen.length >= 10, `collected ${messagesSeen.length} messages`);
    const keyLines = [shop.privateKeyPem, other.privateKeyPem, rsaKeyPem, encryptedKeyPem]
      .flatMap((pem) => pem.split("\n"))
      .filter((line) => line.length > 20 && !line.startsWith("-----"));
    for (const message of messagesSeen) {
      assert.ok(!message.includes("PRIVATE KEY"), message);
      for (const line of keyLines) assert.ok(!message.includes(line), message);
    }
  });
});

/** `openssl ec` rewrites a PKCS#8 EC key in the traditional SEC1 form ("BEGIN EC PRIVATE KEY"). */
function convertToSec1(pkcs8Pem: string): Promise<string> {
  return inTempDir(async (dir) => {
    await writeFile(join(dir, "key.pem"), pkcs8Pem);
    return openssl(["ec", "-in", "key.pem"], dir);
  });
}
