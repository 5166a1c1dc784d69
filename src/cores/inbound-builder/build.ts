// The public face of the inbound builder: operator JSON (or one user's fields) plus a target wire
// layout (or a flavor, meaning its newest layout) in, a finished core message or the complete list
// of problems out. Pure: no I/O.

import {
  normaliseShadowsocksMethod,
  type Shadowsocks2022Method,
  shadowsocks2022Method,
  ss2022KeyProblem,
} from "../../protocols/shadowsocks.ts";
import { VLESS_VISION_FLOW } from "../../protocols/vless.ts";
import type { BuildResult, CoreProtocol, Problem } from "../core-types.ts";
import { type BuildTarget, layoutFlavor, targetLayout } from "../wire-layout.ts";
import type { BuiltInbound, BuiltUser } from "./built.ts";
import { encodeV2rayInbound, encodeV2rayUser, V2RAY_ACCOUNT_TYPES } from "./encode-v2ray.ts";
import { encodeXrayInbound, encodeXrayUser, xrayAccountType } from "./encode-xray.ts";
import { inboundGuardProblems } from "./guards.ts";
import type { UserPlan } from "./plan.ts";
import { type ReadOptions, readInbound } from "./read-inbound.ts";
import { emailProblem, passwordProblem, uuidProblem } from "./values.ts";

/** Builds the InboundHandlerConfig for `target` from an Xray-style inbound object. */
export function buildInbound(
  json: unknown,
  target: BuildTarget,
  options: ReadOptions = {},
): BuildResult<BuiltInbound> {
  const layout = targetLayout(target);
  const flavor = layoutFlavor(layout);
  const { plan, problems } = readInbound(json, layout, options);
  if (plan === undefined) return { ok: false, problems };
  const proxy = plan.proxy;
  const facts = {
    layout,
    ref: {
      tag: plan.tag,
      protocol: proxy.protocol,
      ...(proxy.protocol === "shadowsocks" ? { shadowsocksMethod: proxy.method } : {}),
    },
    port: plan.port,
    emails: proxy.users.map((user) => user.email),
  };
  const built: BuiltInbound =
    flavor === "v2ray"
      ? { ...facts, flavor, config: encodeV2rayInbound(plan) }
      : { ...facts, flavor, config: encodeXrayInbound(plan, layout) };
  const guard = inboundGuardProblems(built);
  return guard.length > 0 ? { ok: false, problems: guard } : { ok: true, value: built };
}

export type UserSpec = {
  email: string;
  level?: number;
  /** UUID for vless/vmess, password for trojan/shadowsocks, base64 key for SS-2022. */
  credential: string;
  /** VLESS on Xray: "" or "xtls-rprx-vision" (the inbound must be tcp + tls/reality). */
  flow?: string;
  /** Shadowsocks: the inbound's method, which decides the account type. */
  shadowsocksMethod?: string;
};

/** Builds one user with the account type of `protocol` on `target`, for AlterInbound AddUser. */
export function buildUser(
  protocol: CoreProtocol,
  target: BuildTarget,
  spec: UserSpec,
): BuildResult<BuiltUser> {
  const layout = targetLayout(target);
  const flavor = layoutFlavor(layout);
  const problems: Problem[] = [];
  const add = (path: string, message: string | undefined) => {
    if (message !== undefined) problems.push({ path, message });
  };
  add("email", emailProblem(spec.email));
  const level = spec.level ?? 0;
  if (!Number.isInteger(level) || level < 0 || level > 255) add("level", "must be an integer from 0 to 255");
  add("credential", credentialProblem(protocol, spec));
  const flow = spec.flow ?? "";
  if (flow !== "" && (protocol !== "vless" || flavor !== "xray" || flow !== VLESS_VISION_FLOW)) {
    add("flow", `only "${VLESS_VISION_FLOW}" on VLESS with Xray`);
  }
  if (protocol === "shadowsocks" && flavor === "v2ray") {
    add("protocol", "V2Ray 4.x shadowsocks inbounds take no users through the API (one inbound per user)");
  }
  const method =
    spec.shadowsocksMethod === undefined ? undefined : normaliseShadowsocksMethod(spec.shadowsocksMethod);
  if (protocol === "shadowsocks" && method === undefined) {
    add("shadowsocksMethod", "must be a supported method");
  }
  if (problems.length > 0) return { ok: false, problems };
  const credential =
    protocol === "vless" || protocol === "vmess" ? spec.credential.toLowerCase() : spec.credential;
  const plan: UserPlan = { email: spec.email, level, credential, flow };
  const facts = { layout, protocol, email: spec.email, credential };
  const value: BuiltUser =
    flavor === "v2ray"
      ? {
          ...facts,
          flavor,
          accountType: V2RAY_ACCOUNT_TYPES[protocol],
          user: encodeV2rayUser(protocol, plan, method),
        }
      : {
          ...facts,
          flavor,
          accountType: xrayAccountType(protocol, layout, method),
          user: encodeXrayUser(protocol, plan, layout, method),
        };
  return { ok: true, value };
}

function credentialProblem(protocol: CoreProtocol, spec: UserSpec): string | undefined {
  if (protocol === "vless" || protocol === "vmess") return uuidProblem(spec.credential);
  const method: Shadowsocks2022Method | undefined =
    spec.shadowsocksMethod === undefined ? undefined : shadowsocks2022Method(spec.shadowsocksMethod);
  if (protocol === "shadowsocks" && method !== undefined) return ss2022KeyProblem(spec.credential, method);
  return passwordProblem(spec.credential);
}
