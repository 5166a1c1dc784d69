// The Shadowsocks facts every layer shares: which method names are accepted (aliases, any case, no
// prototype keys), which are 2022, and the keys and passwords made for them.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  generateSs2022Key,
  isShadowsocks2022,
  newShadowsocksPassword,
  normaliseShadowsocksMethod,
  SHADOWSOCKS_2022_METHODS,
  SHADOWSOCKS_AEAD_METHODS,
  shadowsocks2022Method,
  sip002MethodName,
  ss2022KeyProblem,
} from "./shadowsocks.ts";

test("every supported method names itself; aliases and upper case name the same method", () => {
  for (const method of [...SHADOWSOCKS_AEAD_METHODS, ...SHADOWSOCKS_2022_METHODS]) {
    assert.equal(normaliseShadowsocksMethod(method), method);
    assert.equal(normaliseShadowsocksMethod(method.toUpperCase()), method);
  }
  assert.equal(normaliseShadowsocksMethod("chacha20-ietf-poly1305"), "chacha20-poly1305");
  assert.equal(normaliseShadowsocksMethod("AEAD_AES_128_GCM"), "aes-128-gcm");
});

test("methods Portcullis does not offer are refused, and so are prototype keys", () => {
  for (const text of ["2022-blake3-chacha20-poly1305", "rc4-md5", "none", "", "constructor", "__proto__"]) {
    assert.equal(normaliseShadowsocksMethod(text), undefined, text);
  }
});

test("2022 methods are told apart from AEAD ones", () => {
  assert.equal(isShadowsocks2022("2022-blake3-aes-128-gcm"), true);
  assert.equal(isShadowsocks2022("aes-128-gcm"), false);
  assert.equal(isShadowsocks2022(undefined), false);
  assert.equal(shadowsocks2022Method("2022-BLAKE3-AES-256-GCM"), "2022-blake3-aes-256-gcm");
  assert.equal(shadowsocks2022Method("aes-256-gcm"), undefined);
  assert.equal(shadowsocks2022Method("2022-blake3-chacha20-poly1305"), undefined);
});

test("2022 keys are standard base64 of the cipher's key size, and fresh ones pass that check", () => {
  for (const [method, bytes] of [
    ["2022-blake3-aes-128-gcm", 16],
    ["2022-blake3-aes-256-gcm", 32],
  ] as const) {
    const key = generateSs2022Key(method);
    assert.equal(Buffer.from(key, "base64").length, bytes);
    assert.equal(ss2022KeyProblem(key, method), undefined);
    assert.match(ss2022KeyProblem(Buffer.alloc(bytes + 1).toString("base64"), method) ?? "", /exactly/);
    assert.match(ss2022KeyProblem(key.replace(/=+$/, ""), method) ?? "", /base64/);
  }
});

test("a new user password is a 2022 key for 2022 methods and 24 base64url characters otherwise", () => {
  assert.equal(Buffer.from(newShadowsocksPassword("2022-blake3-aes-128-gcm"), "base64").length, 16);
  assert.match(newShadowsocksPassword("aes-256-gcm"), /^[A-Za-z0-9_-]{24}$/);
  assert.match(newShadowsocksPassword(undefined), /^[A-Za-z0-9_-]{24}$/);
});

test("share links name chacha20-poly1305 by SIP002's name and the others as they are", () => {
  assert.equal(sip002MethodName("chacha20-poly1305"), "chacha20-ietf-poly1305");
  assert.equal(sip002MethodName("aes-128-gcm"), "aes-128-gcm");
});
