// Last checks on the exact messages about to be sent: every request shape known to panic V2Ray
// 4.34 (probe §7) or to leave the core in a state the API cannot undo is refused here.

import type { CoreFlavor, InboundRef, Problem } from "../core-types.ts";
import { layoutFlavor, type WireLayout } from "../wire-layout.ts";
import type { BuiltInbound, BuiltUser } from "./built.ts";
import { V2RAY_ACCOUNT_TYPES } from "./encode-v2ray.ts";
import { xrayAccountType } from "./encode-xray.ts";
import type { InboundSummary, UserSummary } from "./inspect.ts";
import { summarizeV2rayInbound, summarizeV2rayUser } from "./inspect-v2ray.ts";
import { summarizeXrayInbound, summarizeXrayUser } from "./inspect-xray.ts";

const RECEIVER_TYPES: Record<CoreFlavor, string> = {
  v2ray: "v2ray.core.app.proxyman.ReceiverConfig",
  xray: "xray.app.proxyman.ReceiverConfig",
};

export function summarizeBuiltInbound(built: BuiltInbound): InboundSummary {
  return built.flavor === "v2ray"
    ? summarizeV2rayInbound(built.config)
    : summarizeXrayInbound(built.config, built.layout);
}

export function summarizeBuiltUser(user: BuiltUser): UserSummary {
  return user.flavor === "v2ray" ? summarizeV2rayUser(user.user) : summarizeXrayUser(user.user);
}

export function inboundGuardProblems(built: BuiltInbound): Problem[] {
  const summary = summarizeBuiltInbound(withoutInlineUsers(built));
  const problems: Problem[] = [];
  const add = (path: string, message: string) => problems.push({ path: `inbound.${path}`, message });
  if (summary.tag === "" || summary.tag !== built.ref.tag) {
    add("tag", "must be the non-empty tag the builder set");
  }
  if (summary.receiverType !== RECEIVER_TYPES[built.flavor]) {
    add("receiver_settings", "must be a ReceiverConfig");
  }
  if (summary.ports.length === 0) add("receiver_settings.port", "is missing (the core would panic)");
  for (const [from, to] of summary.ports) {
    if (from < 1 || to > 65535 || from > to) add("receiver_settings.port", "is out of range");
  }
  if (summary.listen !== "ip") add("receiver_settings.listen", "must be an IP address");
  if (summary.protocol === null) {
    add("proxy_settings", "is missing or not a vless/vmess/trojan/shadowsocks server");
  } else if (summary.protocol !== built.ref.protocol) {
    add("proxy_settings", `is ${summary.protocol}, not ${built.ref.protocol}`);
  }
  if (summary.users === null) add("proxy_settings", "cannot be decoded");
  else {
    const check = new UsersCheck(summary.expectedAccountType, add);
    for (const user of summary.users) check.next(user);
  }
  if (built.flavor === "v2ray" && summary.protocol === "shadowsocks" && summary.users?.length !== 1) {
    add("proxy_settings.user", "V2Ray 4.x shadowsocks needs exactly one user");
  }
  // The users appended inline were put through the same UsersCheck as they were encoded.
  if (built.inline !== undefined) problems.push(...built.inline.problems);
  return problems;
}

/** The inbound as it was before users were appended inline (itself when none were). */
export function withoutInlineUsers(built: BuiltInbound): BuiltInbound {
  const value = built.inline?.baseProxyValue;
  if (value === undefined) return built;
  if (built.flavor === "v2ray") {
    const proxy = built.config.proxySettings;
    return proxy === undefined
      ? built
      : { ...built, config: { ...built.config, proxySettings: { ...proxy, value } } };
  }
  const proxy = built.config.proxySettings;
  return proxy === undefined
    ? built
    : { ...built, config: { ...built.config, proxySettings: { ...proxy, value } } };
}

/** The users' secrets an AddInbound carries, to be cut out of any error text that echoes them. */
export function inboundSecrets(built: BuiltInbound): string[] {
  const own = (summarizeBuiltInbound(withoutInlineUsers(built)).users ?? []).flatMap(
    (u) => u.credential ?? [],
  );
  return built.inline === undefined ? own : [...own, ...built.inline.credentials];
}

/**
 * The per-user checks of an inbound's users, one user after another (so users appended inline can
 * be checked as they are encoded): an email, the proxy's account type, a credential, and neither
 * the email (case-insensitive) nor the credential repeated within the inbound.
 */
export class UsersCheck {
  readonly #emails = new Set<string>();
  readonly #credentials = new Set<string>();
  #index = 0;

  constructor(
    private readonly expectedAccountType: string | null,
    private readonly add: (path: string, message: string) => void,
  ) {}

  next(user: UserSummary): void {
    const path = `proxy_settings.users[${this.#index}]`;
    this.#index += 1;
    const add = this.add;
    if (user.email === "") add(`${path}.email`, "is empty (the core could never remove the user)");
    if (user.accountType !== this.expectedAccountType)
      add(`${path}.account`, `must be ${this.expectedAccountType}`);
    if (user.credential === null || user.credential === "") add(`${path}.account`, "has no credential");
    const email = user.email.toLowerCase();
    if (this.#emails.has(email)) add(`${path}.email`, "is a duplicate");
    this.#emails.add(email);
    if (user.credential !== null && this.#credentials.has(user.credential)) {
      add(`${path}.account`, "repeats a credential");
    }
    if (user.credential !== null) this.#credentials.add(user.credential);
  }
}

/** The account type a user of `inbound` must carry on `layout`. */
export function expectedAccountType(layout: WireLayout, inbound: InboundRef): string {
  return layoutFlavor(layout) === "v2ray"
    ? V2RAY_ACCOUNT_TYPES[inbound.protocol]
    : xrayAccountType(inbound.protocol, layout, inbound.shadowsocksMethod);
}

export function userGuardProblems(layout: WireLayout, inbound: InboundRef, user: BuiltUser): Problem[] {
  const problems: Problem[] = [];
  const add = (path: string, message: string) => problems.push({ path: `user.${path}`, message });
  const flavor: CoreFlavor = layoutFlavor(layout);
  if (user.layout !== layout) add("layout", `was built for ${user.layout}, the core speaks ${layout}`);
  if (user.protocol !== inbound.protocol) {
    add(
      "protocol",
      `is ${user.protocol} but inbound ${inbound.tag} is ${inbound.protocol} (the core would panic)`,
    );
  }
  if (flavor === "v2ray" && inbound.protocol === "shadowsocks") {
    add("protocol", "V2Ray 4.x shadowsocks inbounds take no users through the API (one inbound per user)");
  }
  if (inbound.protocol === "shadowsocks" && flavor === "xray" && inbound.shadowsocksMethod === undefined) {
    add("protocol", "the inbound's shadowsocks method is needed to pick the account type");
  }
  const summary = summarizeBuiltUser(user);
  const expected = expectedAccountType(layout, inbound);
  if (summary.accountType !== expected) add("account", `must be ${expected} (the core would panic)`);
  if (summary.email === "") add("email", "is empty (the core could never remove the user)");
  if (summary.credential === null || summary.credential === "") add("account", "has no credential");
  return problems;
}
