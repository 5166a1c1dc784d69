// ss:// links in SIP002 form. AEAD methods put base64url(method:password) without padding in
// the userinfo; 2022 methods must not be base64 (SIP022), so they are percent-escaped instead.
import {
  isShadowsocks2022,
  type Shadowsocks2022Method,
  type ShadowsocksMethod,
  sip002MethodName,
  ss2022KeyBytes,
  ss2022KeyProblem,
} from "../protocols/shadowsocks.ts";
import { fillShape, type LinkShape } from "./shape.ts";
import type { ShadowsocksTarget } from "./types.ts";
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
  if (!isShadowsocks2022(method)) {
    return Buffer.from(`${sip002MethodName(method)}:${password}`, "utf8").toString("base64url");
  }
  check2022Password(method as Shadowsocks2022Method, password);
  // The whole password is escaped, so a multi-user `serverKey:userKey` carries its `:` as %3A;
  // every parser splits the method off at the first `:` only.
  return `${escapeComponent(method)}:${escapeComponent(password)}`;
}

/** 2022 keys are base64 PSKs of the cipher's key length; a wrong one fails only at connect time. */
function check2022Password(method: Shadowsocks2022Method, password: string): void {
  const keys = password.split(":");
  if (keys.length > 2) throw new InvalidLinkTargetError("a 2022 password is key or serverKey:userKey");
  if (keys.some((key) => ss2022KeyProblem(key, method) !== undefined)) {
    throw new InvalidLinkTargetError(`${method} keys are base64 of ${ss2022KeyBytes(method)} bytes`);
  }
}
