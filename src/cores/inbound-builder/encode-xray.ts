// Turns a validated InboundPlan / UserPlan into Xray messages (`xray.*`) for one wire layout:
// PortList receivers with the layout's numbering, Xray's own cipher numbers, SS-2022 multi-user in
// the layout's user form, VLESS flow; streams in encode-xray-stream.ts.

import { create } from "@bufbuild/protobuf";
import { Network } from "../../gen/xray/common/net_pb.ts";
import { type User, UserSchema } from "../../gen/xray/common/protocol_pb.ts";
import { type TypedMessage, TypedMessageSchema } from "../../gen/xray/common/serial_pb.ts";
import { type InboundHandlerConfig, InboundHandlerConfigSchema } from "../../gen/xray/core_pb.ts";
import * as ss2022Legacy from "../../gen/xray/proxy/shadowsocks_2022_legacy_pb.ts";
import {
  MultiUserServerConfigSchema,
  AccountSchema as Ss2022AccountSchema,
} from "../../gen/xray/proxy/shadowsocks_2022_pb.ts";
import {
  CipherType,
  AccountSchema as ShadowsocksAccountSchema,
  ServerConfigSchema as ShadowsocksServerConfigSchema,
} from "../../gen/xray/proxy/shadowsocks_pb.ts";
import {
  AccountSchema as TrojanAccountSchema,
  ServerConfigSchema as TrojanServerConfigSchema,
} from "../../gen/xray/proxy/trojan_pb.ts";
import { ConfigSchema as VlessInboundSchema } from "../../gen/xray/proxy/vless_inbound_pb.ts";
import { AccountSchema as VlessAccountSchema } from "../../gen/xray/proxy/vless_pb.ts";
import { ConfigSchema as VmessInboundSchema } from "../../gen/xray/proxy/vmess_inbound_pb.ts";
import { AccountSchema as VmessAccountSchema } from "../../gen/xray/proxy/vmess_pb.ts";
import { isShadowsocks2022, type ShadowsocksMethod } from "../../protocols/shadowsocks.ts";
import type { CoreProtocol } from "../core-types.ts";
import { LAYOUT_FACTS, type WireLayout } from "../wire-layout.ts";
import { encodeXrayStream } from "./encode-xray-stream.ts";
import type { InboundPlan, ProxyPlan, UserPlan } from "./plan.ts";
import { typedXray } from "./typed-message.ts";
import { encodeReceiver, RECEIVER_TYPE_NAME } from "./xray-variants.ts";

/** Before Xray 25.1 the SS-2022 "account" is the shadowsocks_2022.User itself. */
function isLegacySs2022(layout: WireLayout): boolean {
  return LAYOUT_FACTS[layout].ss2022 === "legacy";
}

/** The account type a user of `protocol` must carry on `layout`; SS-2022 inbounds take their own type. */
export function xrayAccountType(
  protocol: CoreProtocol,
  layout: WireLayout,
  shadowsocksMethod?: string,
): string {
  if (protocol === "shadowsocks" && isShadowsocks2022(shadowsocksMethod)) {
    return isLegacySs2022(layout) ? ss2022Legacy.UserSchema.typeName : Ss2022AccountSchema.typeName;
  }
  const types: Record<CoreProtocol, string> = {
    vless: VlessAccountSchema.typeName,
    vmess: VmessAccountSchema.typeName,
    trojan: TrojanAccountSchema.typeName,
    shadowsocks: ShadowsocksAccountSchema.typeName,
  };
  return types[protocol];
}

const CIPHERS: Partial<Record<ShadowsocksMethod, CipherType>> = {
  "aes-128-gcm": CipherType.AES_128_GCM,
  "aes-256-gcm": CipherType.AES_256_GCM,
  "chacha20-poly1305": CipherType.CHACHA20_POLY1305,
};

export function encodeXrayInbound(plan: InboundPlan, layout: WireLayout): InboundHandlerConfig {
  const variant = LAYOUT_FACTS[layout].receiver;
  if (variant === "v2ray") throw new Error(`${layout} is not an Xray layout`);
  const sniffing = plan.sniffing;
  const receiver = encodeReceiver(variant, {
    portList: { range: [{ From: plan.port, To: plan.port }] },
    listen: { address: { case: "ip", value: plan.listen } },
    streamSettings: encodeXrayStream(plan.stream, layout),
    sniffingSettings:
      sniffing === null
        ? undefined
        : {
            enabled: sniffing.enabled,
            destinationOverride: sniffing.destOverride,
            metadataOnly: sniffing.metadataOnly,
            routeOnly: sniffing.routeOnly,
          },
  });
  return create(InboundHandlerConfigSchema, {
    tag: plan.tag,
    receiverSettings: create(TypedMessageSchema, { type: RECEIVER_TYPE_NAME, value: receiver }),
    proxySettings: encodeProxy(plan.proxy, layout),
  });
}

function encodeProxy(proxy: ProxyPlan, layout: WireLayout): TypedMessage {
  switch (proxy.protocol) {
    case "vless":
      return typedXray(VlessInboundSchema, {
        clients: proxy.users.map((u) => encodeXrayUser("vless", u, layout)),
      });
    case "vmess":
      return typedXray(VmessInboundSchema, {
        user: proxy.users.map((u) => encodeXrayUser("vmess", u, layout)),
      });
    case "trojan":
      return typedXray(TrojanServerConfigSchema, {
        users: proxy.users.map((u) => encodeXrayUser("trojan", u, layout)),
      });
    case "shadowsocks":
      return encodeShadowsocks(proxy, layout);
  }
}

function encodeShadowsocks(proxy: Extract<ProxyPlan, { protocol: "shadowsocks" }>, layout: WireLayout) {
  const network = proxy.networks.map((name) => (name === "tcp" ? Network.TCP : Network.UDP));
  if (isShadowsocks2022(proxy.method) && isLegacySs2022(layout)) {
    return typedXray(ss2022Legacy.MultiUserServerConfigSchema, {
      method: proxy.method,
      key: proxy.serverKey,
      users: proxy.users.map(legacySs2022User),
      network,
    });
  }
  const users = proxy.users.map((u) => encodeXrayUser("shadowsocks", u, layout, proxy.method, proxy.ivCheck));
  if (isShadowsocks2022(proxy.method)) {
    return typedXray(MultiUserServerConfigSchema, {
      method: proxy.method,
      key: proxy.serverKey,
      users,
      network,
    });
  }
  return typedXray(ShadowsocksServerConfigSchema, { users, network });
}

/** Pre-25.1 SS-2022: the user record itself, read by the core for key, email and level. */
function legacySs2022User(user: UserPlan): ss2022Legacy.User {
  return create(ss2022Legacy.UserSchema, { key: user.credential, email: user.email, level: user.level });
}

export function encodeXrayUser(
  protocol: CoreProtocol,
  user: UserPlan,
  layout: WireLayout,
  method?: ShadowsocksMethod,
  ivCheck = false,
): User {
  return create(UserSchema, {
    level: user.level,
    email: user.email,
    account: encodeAccount(protocol, user, layout, method, ivCheck),
  });
}

function encodeAccount(
  protocol: CoreProtocol,
  user: UserPlan,
  layout: WireLayout,
  method: ShadowsocksMethod | undefined,
  ivCheck: boolean,
): TypedMessage {
  if (protocol === "shadowsocks" && isShadowsocks2022(method) && isLegacySs2022(layout)) {
    return typedXray(ss2022Legacy.UserSchema, legacySs2022User(user));
  }
  switch (protocol) {
    case "vless":
      return typedXray(VlessAccountSchema, { id: user.credential, flow: user.flow });
    case "vmess":
      return typedXray(VmessAccountSchema, { id: user.credential });
    case "trojan":
      return typedXray(TrojanAccountSchema, { password: user.credential });
    case "shadowsocks":
      if (isShadowsocks2022(method)) return typedXray(Ss2022AccountSchema, { key: user.credential });
      return typedXray(ShadowsocksAccountSchema, {
        password: user.credential,
        cipherType: (method === undefined ? undefined : CIPHERS[method]) ?? CipherType.UNKNOWN,
        ivCheck,
      });
  }
}
