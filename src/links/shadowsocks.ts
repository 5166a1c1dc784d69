// ss:// links in SIP002 form. AEAD methods put base64url(method:password) without padding in
// the userinfo; 2022 methods must not be base64 (SIP022), so they are percent-escaped instead.
import { fillShape, type LinkShape } from "./shape.ts";
import { type ShadowsocksMethod, type ShadowsocksTarget, SS_2022_METHODS } from "./types.ts";
import { authority, escapeComponent, fragment, InvalidLinkTargetError } from "./uri.ts";

export function buildShadowsocksLink(target: ShadowsocksTarget): string {
  return fillShape(shadowsocksShape(target), target.credential.password);
}

/** Everything but the password, which is the secret (with the method, it makes the userinfo). */
export function shadowsocksShape(target: ShadowsocksTarget): LinkShape {
  const { method } = target.credential;
  // No plugin, so no `/?plugin=`: Xray inbounds take none.
  const tail = `@${authority(target.host, target.port)}${fragment(target.remark)}`;
  return {
    head: "ss://",
    tail,
    secret: (password) => {
      if (password === "") throw new InvalidLinkTargetError("shadowsocks password is empty");
      return userinfo(method, password);
    },
  };
}

function userinfo(method: ShadowsocksMethod, password: string): string {
  if (!is2022(method)) {
    // ss-local and SIP002 parsers know only the ietf name of Xray's chacha20-poly1305.
    const linkMethod = method === "chacha20-poly1305" ? "chacha20-ietf-poly1305" : method;
    return Buffer.from(`${linkMethod}:${password}`, "utf8").toString("base64url");
  }
  check2022Password(method, password);
  // The whole password is escaped, so a multi-user `serverKey:userKey` carries its `:` as %3A;
  // every parser splits the method off at the first `:` only.
  return `${escapeComponent(method)}:${escapeComponent(password)}`;
}

function is2022(method: ShadowsocksMethod): method is (typeof SS_2022_METHODS)[number] {
  return (SS_2022_METHODS as readonly string[]).includes(method);
}

const STANDARD_BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** 2022 keys are base64 PSKs of the cipher's key length; a wrong one fails only at connect time. */
function check2022Password(method: (typeof SS_2022_METHODS)[number], password: string): void {
  const keyBytes = method === "2022-blake3-aes-128-gcm" ? 16 : 32;
  const keys = password.split(":");
  if (keys.length > 2) throw new InvalidLinkTargetError("a 2022 password is key or serverKey:userKey");
  if (keys.length === 2 && method === "2022-blake3-chacha20-poly1305") {
    throw new InvalidLinkTargetError("2022 multi-user works only with the AES methods");
  }
  for (const key of keys) {
    if (!STANDARD_BASE64.test(key) || Buffer.from(key, "base64").length !== keyBytes) {
      throw new InvalidLinkTargetError(`${method} keys are base64 of ${keyBytes} bytes`);
    }
  }
}
