// Reads a shadowsocks inbound's `settings`: AEAD ciphers on both flavors (one user on V2Ray 4.x),
// and SS-2022 multi-user on Xray only.

import {
  isShadowsocks2022,
  normaliseShadowsocksMethod,
  type Shadowsocks2022Method,
  type ShadowsocksMethod,
  ss2022KeyProblem,
} from "../../protocols/shadowsocks.ts";
import type { CoreFlavor } from "../core-types.ts";
import type { ObjectReader } from "./json-reader.ts";
import type { ProxyPlan, UserPlan } from "./plan.ts";
import { checkDuplicates, readClient, readClientList } from "./read-clients.ts";

export function readShadowsocks(settings: ObjectReader, flavor: CoreFlavor): ProxyPlan | undefined {
  const method = readMethod(settings, flavor);
  const networks = readNetworks(settings);
  const ivCheck = settings.bool("ivCheck") ?? false;
  if (ivCheck && flavor === "v2ray") settings.problem("ivCheck", "not supported by V2Ray 4.x");
  if (method === undefined) return undefined;
  const is2022 = isShadowsocks2022(method);
  const serverKey = is2022 ? readServerKey(settings, method as Shadowsocks2022Method) : "";
  const users = settings.has("clients")
    ? readClients(settings, flavor, method)
    : readSingleUser(settings, flavor, is2022);
  if (users === undefined || serverKey === undefined || networks === undefined) return undefined;
  if (flavor === "v2ray" && users.length !== 1) {
    settings.problem(
      "clients",
      "V2Ray 4.x holds exactly one user per shadowsocks inbound (use one inbound, one port, per user)",
    );
    return undefined;
  }
  return { protocol: "shadowsocks", method, serverKey, users, networks, ivCheck };
}

function readMethod(settings: ObjectReader, flavor: CoreFlavor): ShadowsocksMethod | undefined {
  const text = settings.string("method");
  if (text === undefined) {
    settings.problem("method", "is required");
    return undefined;
  }
  const method = normaliseShadowsocksMethod(text);
  if (method === undefined) {
    settings.problem(
      "method",
      "must be aes-128-gcm, aes-256-gcm, chacha20-poly1305 or a 2022-blake3-aes method",
    );
  } else if (isShadowsocks2022(method) && flavor === "v2ray") {
    settings.problem("method", "Shadowsocks 2022 is not supported by V2Ray 4.x");
    return undefined;
  }
  return method;
}

function readServerKey(settings: ObjectReader, method: Shadowsocks2022Method): string | undefined {
  const key = settings.string("password");
  const message = key === undefined ? "is required (the server key)" : ss2022KeyProblem(key, method);
  if (message !== undefined) settings.problem("password", message);
  return message === undefined ? key : undefined;
}

function readClients(
  settings: ObjectReader,
  flavor: CoreFlavor,
  method: ShadowsocksMethod,
): UserPlan[] | undefined {
  for (const key of ["email", "level"]) settings.unsupported(key, "give users in clients, not here");
  if (!isShadowsocks2022(method)) settings.unsupported("password", "give passwords in clients, not here");
  const users = readClientList(settings, "shadowsocks", flavor, "password", (client) => {
    const own = client.string("method");
    if (own !== undefined && normaliseShadowsocksMethod(own) !== method) {
      client.problem("method", "must be the inbound's method (one method per inbound)");
    }
  });
  if (users === undefined || !isShadowsocks2022(method)) return users;
  let valid = true;
  users.forEach((user, index) => {
    const message = ss2022KeyProblem(user.credential, method as Shadowsocks2022Method);
    if (message !== undefined) {
      settings.problems.push({ path: `${settings.at("clients")}[${index}].password`, message });
      valid = false;
    }
  });
  return valid ? users : undefined;
}

/** The one-user form Xray also accepts: method/password/email/level directly in settings. */
function readSingleUser(settings: ObjectReader, flavor: CoreFlavor, is2022: boolean): UserPlan[] | undefined {
  if (is2022) {
    for (const key of ["email", "level"]) settings.unsupported(key, "give SS-2022 users in clients");
    return [];
  }
  if (!settings.has("email") && !settings.has("password")) return [];
  const user = readClient(settings, "shadowsocks", flavor, "password");
  if (user === null) return undefined;
  checkDuplicates([user], settings.path, settings.problems);
  return [user];
}

function readNetworks(settings: ObjectReader): ("tcp" | "udp")[] | undefined {
  const raw = settings.raw("network");
  if (raw === undefined) return ["tcp"];
  const parts = typeof raw === "string" ? raw.split(",").map((part) => part.trim()) : raw;
  if (
    !Array.isArray(parts) ||
    parts.length === 0 ||
    !parts.every((part) => part === "tcp" || part === "udp")
  ) {
    settings.problem("network", 'must be "tcp", "udp" or "tcp,udp"');
    return undefined;
  }
  return [...new Set(parts as ("tcp" | "udp")[])];
}
