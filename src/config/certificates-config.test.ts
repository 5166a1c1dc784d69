// The certificate settings: defaults that work with Google Public CA once EAB is set, and one clear
// problem line per wrong value.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ConfigError, DEFAULT_ACME_DIRECTORY_URL, loadConfig } from "./config.ts";

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe("certificate settings", () => {
  test("defaults: Google Public CA, http-01 on port 80, self-signed for 365 days", () => {
    const { certificates } = loadConfig({});
    assert.equal(certificates.acme.directoryUrl, DEFAULT_ACME_DIRECTORY_URL);
    assert.equal(certificates.acme.directoryUrl, "https://dv.acme-v02.api.pki.goog/directory");
    assert.equal(certificates.acme.challenge, "http-01");
    assert.equal(certificates.acme.http01Host, "0.0.0.0");
    assert.equal(certificates.acme.http01Port, 80);
    assert.equal(certificates.acme.eab, undefined);
    assert.equal(certificates.selfSignedValidityDays, 365);
  });

  test("EAB, Let's Encrypt, dns-01 with a hook, a CA file", () => {
    const { certificates } = loadConfig({
      PORTCULLIS_ACME_DIRECTORY_URL: "https://acme-v02.api.letsencrypt.org/directory",
      PORTCULLIS_ACME_EAB_KID: "kid-1",
      PORTCULLIS_ACME_EAB_HMAC_KEY: "zWNDZM6eQGHWpSRTPal5eIUYFTu7EajVIoguysqZ9wG44nMEtx3MUAsUDkMTQ12W",
      PORTCULLIS_ACME_CHALLENGE: "dns-01",
      PORTCULLIS_ACME_DNS01_HOOK: "/usr/local/bin/dns-hook",
      PORTCULLIS_ACME_CA_FILE: "/etc/ssl/private-ca.pem",
      PORTCULLIS_SELF_SIGNED_VALIDITY_DAYS: "30",
    });
    assert.equal(certificates.acme.eab?.kid, "kid-1");
    assert.equal(certificates.acme.challenge, "dns-01");
    assert.equal(certificates.acme.dns01Hook, "/usr/local/bin/dns-hook");
    assert.equal(certificates.acme.caFile, "/etc/ssl/private-ca.pem");
    assert.equal(certificates.selfSignedValidityDays, 30);
  });

  test("each wrong value is one problem naming the variable", () => {
    const problems = problemsOf({
      PORTCULLIS_ACME_DIRECTORY_URL: "acme.example.com",
      PORTCULLIS_ACME_EAB_KID: "kid-only",
      PORTCULLIS_ACME_CHALLENGE: "tls-alpn-01",
      PORTCULLIS_ACME_HTTP01_PORT: "0",
      PORTCULLIS_SELF_SIGNED_VALIDITY_DAYS: "0",
    });
    for (const name of [
      "PORTCULLIS_ACME_DIRECTORY_URL",
      "PORTCULLIS_ACME_EAB_KID and PORTCULLIS_ACME_EAB_HMAC_KEY",
      "PORTCULLIS_ACME_CHALLENGE",
      "PORTCULLIS_ACME_HTTP01_PORT",
      "PORTCULLIS_SELF_SIGNED_VALIDITY_DAYS",
    ]) {
      assert.ok(
        problems.some((p) => p.startsWith(name)),
        `${name} in ${problems.join(" | ")}`,
      );
    }
    assert.deepEqual(problemsOf({ PORTCULLIS_ACME_CHALLENGE: "dns-01" }), [
      "PORTCULLIS_ACME_CHALLENGE=dns-01 needs PORTCULLIS_ACME_DNS01_HOOK",
    ]);
  });

  test("a wrong HMAC key is reported without echoing it", () => {
    const problems = problemsOf({
      PORTCULLIS_ACME_EAB_KID: "k",
      PORTCULLIS_ACME_EAB_HMAC_KEY: "not base64url!",
    });
    assert.equal(problems.length, 1);
    assert.ok(!problems[0]?.includes("not base64url!"));
  });
});
