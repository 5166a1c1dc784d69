// The http-01 listener answers exactly the open challenges and nothing else.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Http01Responder, type Http01Server, startHttp01Server } from "./http01-server.ts";

const responder = new Http01Responder();
let server: Http01Server;

before(async () => {
  server = await startHttp01Server({ host: "127.0.0.1", port: 0, responder });
});
after(async () => {
  await server.close();
});

function get(path: string, method = "GET") {
  return fetch(`http://127.0.0.1:${server.port}${path}`, { method });
}

describe("http-01 listener", () => {
  test("an open challenge's token answers its key authorization as text", async () => {
    responder.set("tok_en-1", "tok_en-1.thumbprint");
    const response = await get("/.well-known/acme-challenge/tok_en-1");
    assert.equal(response.status, 200);
    assert.equal(await response.text(), "tok_en-1.thumbprint");
    assert.equal(responder.servedCount, 1);
    assert.equal((await get("/.well-known/acme-challenge/tok_en-1", "HEAD")).status, 200);
  });

  test("a closed challenge, an unknown token, another path or a POST get 404", async () => {
    responder.set("closed", "closed.thumbprint");
    responder.delete("closed");
    for (const path of [
      "/.well-known/acme-challenge/closed",
      "/.well-known/acme-challenge/nope",
      "/",
      "/x",
    ]) {
      assert.equal((await get(path)).status, 404, path);
    }
    responder.set("posted", "posted.thumbprint");
    assert.equal((await get("/.well-known/acme-challenge/posted", "POST")).status, 404);
  });
});
