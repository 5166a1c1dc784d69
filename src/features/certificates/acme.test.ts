// ACME issuance against a real CA: Debian's pebble with EAB required, validating http-01 against our
// own listener and dns-01 through the hook contract (challtestsrv answers pebble's DNS queries).
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, type TestContext, test } from "node:test";
import { fileURLToPath } from "node:url";
import { opensslVerifyChain, splitPemCertificates } from "../../../test/support/openssl.ts";
import { PEBBLE_EAB, type Pebble, startPebble, WRONG_EAB_HMAC_KEY } from "../../../test/support/pebble.ts";
import { requires } from "../../../test/support/requires.ts";
import { type AcmeIssueOptions, createAccountKeyPem, issueCertificate } from "./acme.ts";
import { AcmeIssueError } from "./acme-errors.ts";
import { Http01Responder, type Http01Server, startHttp01Server } from "./http01-server.ts";
import { readCertificateFacts, validateImport } from "./pem.ts";

const needs = requires("pebble", "pebble-challtestsrv", "openssl");

const HOOK_SCRIPT = fileURLToPath(
  new URL("../../../test/support/challtestsrv-dns-hook.mjs", import.meta.url),
);

let pebble: Pebble;
let http01: Http01Server;
let accountKeyPem: string;
let workDir: string;
const responder = new Http01Responder();

needs.before(async () => {
  http01 = await startHttp01Server({ host: "127.0.0.1", port: 0, responder });
  pebble = await startPebble({ httpPort: http01.port });
  accountKeyPem = await createAccountKeyPem();
  workDir = await mkdtemp(join(tmpdir(), "portcullis-acme-test-"));
});
needs.after(async () => {
  await pebble?.stop();
  await http01?.close();
  if (workDir !== undefined) await rm(workDir, { recursive: true, force: true });
});

function options(domain: string, extra: Partial<AcmeIssueOptions> = {}): AcmeIssueOptions {
  return {
    directoryUrl: pebble.directoryUrl,
    accountKeyPem,
    externalAccountBinding: PEBBLE_EAB,
    trustedCaPem: pebble.listenerCaPem,
    domain,
    challenge: { type: "http-01", responder },
    pollIntervalMs: 50,
    requestTimeoutMs: 10_000,
    deadlineMs: 60_000,
    ...extra,
  };
}

/** The AcmeIssueError an issuance fails with; its message goes into the test report as a diagnostic. */
async function issueFailure(t: TestContext, issuing: Promise<unknown>): Promise<AcmeIssueError> {
  const error = await issuing.then(
    () => assert.fail("issuance should have failed"),
    (caught: unknown) => caught,
  );
  assert.ok(error instanceof AcmeIssueError, `expected AcmeIssueError, got ${String(error)}`);
  t.diagnostic(error.message);
  return error;
}

describe("ACME issuance against pebble", { ...needs, timeout: 120_000 }, () => {
  test("http-01: the CA fetches the token from our listener and the chain verifies against its root", async () => {
    const servedBefore = responder.servedCount;
    const issued = await issueCertificate(options("http01.portcullis.test"));

    assert.ok(responder.servedCount > servedBefore, "pebble fetched the token from our http-01 listener");
    assert.match(issued.accountUrl, /^https:\/\/127\.0\.0\.1:\d+\//);
    const check = validateImport({ ...issued, domain: "http01.portcullis.test" });
    assert.equal(check.ok, true, JSON.stringify(check));
    assert.ok(splitPemCertificates(issued.certificatePem).length >= 2, "leaf and intermediate");
    assert.match(await opensslVerifyChain(issued.certificatePem, await pebble.rootPem()), /leaf\.pem: OK/);
  });

  test("dns-01: a wildcard is validated through the hook, which is asked to set and then clear the TXT", async () => {
    const hookLog = join(workDir, "hook.log");
    const hook = {
      command: process.execPath,
      args: [HOOK_SCRIPT],
      env: { CHALLTESTSRV_URL: pebble.challtestsrvUrl, HOOK_LOG: hookLog },
    };
    const issued = await issueCertificate(
      options("*.wild.portcullis.test", { challenge: { type: "dns-01", hook } }),
    );

    assert.deepEqual(readCertificateFacts(issued.certificatePem).subjectAltNames, ["*.wild.portcullis.test"]);
    const calls = (await readFile(hookLog, "utf8")).trim().split("\n");
    assert.deepEqual(
      calls.map((line) => line.split(" ").slice(0, 2).join(" ")),
      ["set _acme-challenge.wild.portcullis.test", "clear _acme-challenge.wild.portcullis.test"],
    );
    assert.match(calls[0]?.split(" ")[2] ?? "", /^[A-Za-z0-9_-]{43}$/);
    assert.match(await opensslVerifyChain(issued.certificatePem, await pebble.rootPem()), /leaf\.pem: OK/);
  });

  test("an IP address is ordered as an IP identifier and validated over http-01", async () => {
    const issued = await issueCertificate(options("127.0.0.1"));
    assert.deepEqual(readCertificateFacts(issued.certificatePem).subjectAltNames, ["127.0.0.1"]);
    assert.match(await opensslVerifyChain(issued.certificatePem, await pebble.rootPem()), /leaf\.pem: OK/);
  });

  test("issuing again for the same name, with the stored account URL, yields a new serial and key", async () => {
    const first = await issueCertificate(options("again.portcullis.test"));
    const second = await issueCertificate(options("again.portcullis.test", { accountUrl: first.accountUrl }));

    assert.equal(second.accountUrl, first.accountUrl);
    assert.notEqual(
      readCertificateFacts(second.certificatePem).serial,
      readCertificateFacts(first.certificatePem).serial,
    );
    assert.notEqual(second.privateKeyPem, first.privateKeyPem);
  });

  test("a wrong EAB HMAC key fails at account registration with the CA's words and no secret", async (t) => {
    const freshAccountKey = await createAccountKeyPem();
    const error = await issueFailure(
      t,
      issueCertificate(
        options("eab.portcullis.test", {
          accountKeyPem: freshAccountKey,
          externalAccountBinding: { kid: PEBBLE_EAB.kid, hmacKey: WRONG_EAB_HMAC_KEY },
        }),
      ),
    );

    assert.equal(error.step, "registering the ACME account");
    assert.match(error.message, /external account binding/i);
    assert.match(error.message, /check the External Account Binding key id and HMAC key/);
    assert.ok(!error.message.includes(WRONG_EAB_HMAC_KEY));
    assert.ok(!error.message.includes("PRIVATE KEY"));
    assert.equal(error.cause, undefined, "no cause object that a logger could serialise");
  });

  test("without EAB the issuance stops before registering, naming what to configure", async (t) => {
    const error = await issueFailure(
      t,
      issueCertificate(options("noeab.portcullis.test", { externalAccountBinding: undefined })),
    );
    assert.equal(error.step, "registering the ACME account");
    assert.match(error.message, /requires External Account Binding/);
  });

  test("an ACME server whose TLS certificate is not trusted fails within seconds, saying so", async (t) => {
    const startedAt = Date.now();
    const error = await issueFailure(
      t,
      issueCertificate(options("tls.portcullis.test", { trustedCaPem: undefined })),
    );
    assert.equal(error.step, "reading the ACME directory");
    assert.match(error.message, /TLS certificate is not trusted/);
    assert.ok(Date.now() - startedAt < 10_000, "no 75 s of acme-client retries");
  });

  test("a failing dns-01 hook fails the validation step with its exit status and stderr", async (t) => {
    const hook = {
      command: process.execPath,
      args: ["-e", "console.error('no API token'); process.exit(3)"],
    };
    const error = await issueFailure(
      t,
      issueCertificate(options("hookfail.portcullis.test", { challenge: { type: "dns-01", hook } })),
    );
    assert.equal(error.step, "validating the domain");
    assert.match(
      error.message,
      /dns-01 hook set _acme-challenge\.hookfail\.portcullis\.test exited with status 3/,
    );
    assert.match(error.message, /no API token/);
  });

  test("http-01 answering the wrong key authorization is refused by the CA, readably", async (t) => {
    // The listener serves `responder`; this one fills it with a wrong key authorization.
    const wrongResponder = new Http01Responder();
    wrongResponder.set = (token) => responder.set(token, "wrong");
    wrongResponder.delete = (token) => responder.delete(token);
    const error = await issueFailure(
      t,
      issueCertificate(
        options("wrongtoken.portcullis.test", { challenge: { type: "http-01", responder: wrongResponder } }),
      ),
    );
    assert.equal(error.step, "validating the domain");
    assert.match(error.message, /did not match/);
  });
});
