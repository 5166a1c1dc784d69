// Every ACME network call has a deadline and the whole issuance can be cut short: checked against a fake
// ACME server that answers the directory and then stops answering, so nothing here waits on a real CA.
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { freePort } from "../../../test/support/ports.ts";
import { type AcmeIssueOptions, createAccountKeyPem, issueCertificate } from "./acme.ts";
import { AcmeIssueError } from "./acme-errors.ts";
import { Http01Responder } from "./http01-server.ts";

let server: Server;
let baseUrl: string;
let accountKeyPem: string;

/** /dir answers like an ACME directory; /silent/dir and every other path accept and never answer. */
function fakeAcme(request: IncomingMessage, response: ServerResponse): void {
  if (request.url === "/dir") {
    const directory = {
      newNonce: `${baseUrl}/nonce`,
      newAccount: `${baseUrl}/acct`,
      newOrder: `${baseUrl}/order`,
    };
    response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(directory));
  }
}

before(async () => {
  server = createServer(fakeAcme);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  accountKeyPem = await createAccountKeyPem();
});
after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function options(directoryUrl: string, extra: Partial<AcmeIssueOptions> = {}): AcmeIssueOptions {
  return {
    directoryUrl,
    accountKeyPem,
    domain: "deadline.portcullis.test",
    challenge: { type: "http-01", responder: new Http01Responder() },
    requestTimeoutMs: 200,
    deadlineMs: 30_000,
    ...extra,
  };
}

async function failure(issuing: Promise<unknown>): Promise<AcmeIssueError> {
  const error = await issuing.then(
    () => assert.fail("issuance should have failed"),
    (caught: unknown) => caught,
  );
  assert.ok(error instanceof AcmeIssueError, `expected AcmeIssueError, got ${String(error)}`);
  return error;
}

describe("ACME deadlines", { timeout: 30_000 }, () => {
  test("a directory that never answers fails after the per-call deadline", async () => {
    const startedAt = Date.now();
    const error = await failure(issueCertificate(options(`${baseUrl}/silent/dir`)));
    assert.equal(error.step, "reading the ACME directory");
    assert.match(error.message, /no answer within 200 ms/);
    assert.ok(Date.now() - startedAt < 5_000);
  });

  test("an ACME call that never answers fails after the per-call deadline, without acme-client's retries", async () => {
    // 2 s per call: the directory, which answers, must not miss its deadline on a loaded machine;
    // acme-client's retries would take 75 s.
    const startedAt = Date.now();
    const error = await failure(issueCertificate(options(`${baseUrl}/dir`, { requestTimeoutMs: 2000 })));
    assert.equal(error.step, "registering the ACME account");
    assert.match(error.message, /no answer to HEAD http:\/\/127\.0\.0\.1:\d+\/nonce within 2000 ms/);
    assert.ok(Date.now() - startedAt < 15_000, "no 75 s of acme-client retries");
  });

  test("the whole issuance stops at its deadline even while a call is still waiting", async () => {
    const startedAt = Date.now();
    const error = await failure(
      issueCertificate(options(`${baseUrl}/dir`, { requestTimeoutMs: 20_000, deadlineMs: 300 })),
    );
    assert.equal(error.step, "waiting for the CA");
    assert.match(error.message, /no result within 300 ms/);
    assert.ok(Date.now() - startedAt < 5_000);
  });

  test("the caller's signal cancels the issuance", async () => {
    const controller = new AbortController();
    const issuing = issueCertificate(
      options(`${baseUrl}/dir`, { requestTimeoutMs: 20_000, signal: controller.signal }),
    );
    controller.abort();
    const error = await failure(issuing);
    assert.match(error.message, /the issuance was cancelled/);
  });

  test("a directory on a closed port fails at once with the connection error", async () => {
    const error = await failure(issueCertificate(options(`http://127.0.0.1:${await freePort()}/dir`)));
    assert.equal(error.step, "reading the ACME directory");
    assert.match(error.message, /ECONNREFUSED/);
  });
});
