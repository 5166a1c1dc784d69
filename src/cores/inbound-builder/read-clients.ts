// Reads `settings` of a vless / vmess / trojan / shadowsocks inbound into a ProxyPlan, refusing
// what the target flavor cannot hold and every shape known to crash or confuse the core.

import { joinPath } from "../../lib/json.ts";
import { VLESS_VISION_FLOW } from "../../protocols/vless.ts";
import type { CoreFlavor, CoreProtocol, Problem } from "../core-types.ts";
import { ObjectReader } from "./json-reader.ts";
import type { ProxyPlan, UserPlan } from "./plan.ts";
import { emailProblem, passwordProblem, uuidProblem } from "./values.ts";

type UserProtocol = "vless" | "vmess" | "trojan";

/** Reads one client object; `null` when it had problems (already recorded). */
export function readClient(
  client: ObjectReader,
  protocol: CoreProtocol,
  flavor: CoreFlavor,
  credentialKey: "id" | "password",
): UserPlan | null {
  const before = client.problems.length;
  const email = client.string("email");
  if (email === undefined) client.problem("email", "is required (the core cannot remove a user without one)");
  else checkValue(client, "email", emailProblem(email));
  const level = client.int("level", 0, 255) ?? 0;
  const credential = client.string(credentialKey);
  const checkCredential = credentialKey === "id" ? uuidProblem : passwordProblem;
  if (credential === undefined) client.problem(credentialKey, "is required");
  else checkValue(client, credentialKey, checkCredential(credential));
  const flow = protocol === "vless" ? readFlow(client, flavor) : "";
  if (protocol === "vmess") readVmessExtras(client);
  if (client.problems.length > before || email === undefined || credential === undefined) return null;
  return { email, level, credential: credentialKey === "id" ? credential.toLowerCase() : credential, flow };
}

function checkValue(reader: ObjectReader, key: string, message: string | undefined): void {
  if (message !== undefined) reader.problem(key, message);
}

function readFlow(client: ObjectReader, flavor: CoreFlavor): string {
  const flow = client.string("flow") ?? "";
  if (flow === "") return "";
  if (flavor === "v2ray") client.problem("flow", "VLESS flow (XTLS) is not supported by V2Ray 4.x");
  else if (flow !== VLESS_VISION_FLOW) client.problem("flow", `must be "" or "${VLESS_VISION_FLOW}"`);
  return flow;
}

function readVmessExtras(client: ObjectReader): void {
  const alterId = client.int("alterId", 0, 65535);
  if (alterId !== undefined && alterId !== 0) {
    client.problem("alterId", "must be 0 (legacy MD5 VMess is insecure and unsupported by Xray)");
  }
  client.harmless("security");
}

/** Reports duplicate emails (the core compares them case-insensitively) and duplicate credentials. */
export function checkDuplicates(users: (UserPlan | null)[], path: string, problems: Problem[]): void {
  const emails = new Map<string, number>();
  const credentials = new Map<string, number>();
  users.forEach((user, index) => {
    if (user === null) return;
    const email = user.email.toLowerCase();
    const seenEmail = emails.get(email);
    if (seenEmail !== undefined) {
      problems.push({
        path: joinPath(joinPath(path, index), "email"),
        message: `duplicates client ${seenEmail}`,
      });
    } else emails.set(email, index);
    const seenCredential = credentials.get(user.credential);
    if (seenCredential !== undefined) {
      problems.push({
        path: joinPath(path, index),
        message: `has the same credential as client ${seenCredential}`,
      });
    } else credentials.set(user.credential, index);
  });
}

export function readClientList(
  settings: ObjectReader,
  protocol: CoreProtocol,
  flavor: CoreFlavor,
  credentialKey: "id" | "password",
  checkExtra?: (client: ObjectReader) => void,
): UserPlan[] | undefined {
  const list = settings.array("clients") ?? [];
  const path = settings.at("clients");
  const users = list.map((item, index) => {
    const client = ObjectReader.of(item, joinPath(path, index), settings.problems);
    if (client === undefined) return null;
    const user = readClient(client, protocol, flavor, credentialKey);
    checkExtra?.(client);
    client.finish();
    return user;
  });
  checkDuplicates(users, path, settings.problems);
  return users.every((user) => user !== null) ? users : undefined;
}

export function readUserProxy(
  protocol: UserProtocol,
  settings: ObjectReader,
  flavor: CoreFlavor,
): ProxyPlan | undefined {
  const users = readClientList(settings, protocol, flavor, protocol === "trojan" ? "password" : "id");
  if (protocol === "vless") {
    const decryption = settings.string("decryption");
    if (decryption !== undefined && decryption !== "none") {
      settings.problem("decryption", 'must be "none" (VLESS encryption is not supported)');
    }
  }
  if (protocol !== "vmess") {
    settings.unsupported("fallbacks", "fallbacks are not supported by Portcullis yet");
  }
  for (const key of ["default", "detour", "disableInsecureEncryption"]) {
    if (protocol === "vmess") settings.unsupported(key, "not supported by Portcullis");
  }
  return users === undefined ? undefined : { protocol, users };
}
