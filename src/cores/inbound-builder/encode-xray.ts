// Turns a validated InboundPlan / UserPlan into Xray messages (`xray.*`): PortList receivers,
// Xray's own cipher numbers, SS-2022 multi-user, VLESS flow; streams in encode-xray-stream.ts.

import { create } from "@bufbuild/protobuf";
import { ReceiverConfigSchema, SniffingConfigSchema } from "../../gen/xray/app/proxyman_pb.ts";
import { Network } from "../../gen/xray/common/net_pb.ts";
import { type User, UserSchema } from "../../gen/xray/common/protocol_pb.ts";
import type { TypedMessage } from "../../gen/xray/common/serial_pb.ts";
import { type InboundHandlerConfig, InboundHandlerConfigSchema } from "../../gen/xray/core_pb.ts";
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
import { encodeXrayStream } from "./encode-xray-stream.ts";
import type { InboundPlan, ProxyPlan, UserPlan } from "./plan.ts";
import { typedXray } from "./typed-message.ts";

/** The account type a user of `protocol` must carry; SS-2022 inbounds take their own type. */
export function xrayAccountType(protocol: CoreProtocol, shadowsocksMethod?: string): string {
  if (protocol === "shadowsocks" && isShadowsocks2022(shadowsocksMethod)) return Ss2022AccountSchema.typeName;
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

export function encodeXrayInbound(plan: InboundPlan): InboundHandlerConfig {
  const sniffing = plan.sniffing;
  const receiver = typedXray(ReceiverConfigSchema, {
    portList: { range: [{ From: plan.port, To: plan.port }] },
    listen: { address: { case: "ip", value: plan.listen } },
    streamSettings: encodeXrayStream(plan.stream),
    sniffingSettings:
      sniffing === null
        ? undefined
        : create(SniffingConfigSchema, {
            enabled: sniffing.enabled,
            destinationOverride: sniffing.destOverride,
            metadataOnly: sniffing.metadataOnly,
            routeOnly: sniffing.routeOnly,
          }),
  });
  return create(InboundHandlerConfigSchema, {
    tag: plan.tag,
    receiverSettings: receiver,
    proxySettings: encodeProxy(plan.proxy),
  });
}

function encodeProxy(proxy: ProxyPlan): TypedMessage {
  switch (proxy.protocol) {
    case "vless":
      return typedXray(VlessInboundSchema, { clients: proxy.users.map((u) => encodeXrayUser("vless", u)) });
    case "vmess":
      return typedXray(VmessInboundSchema, { user: proxy.users.map((u) => encodeXrayUser("vmess", u)) });
    case "trojan":
      return typedXray(TrojanServerConfigSchema, {
        users: proxy.users.map((u) => encodeXrayUser("trojan", u)),
      });
    case "shadowsocks": {
      const users = proxy.users.map((u) => encodeXrayUser("shadowsocks", u, proxy.method, proxy.ivCheck));
      const network = proxy.networks.map((name) => (name === "tcp" ? Network.TCP : Network.UDP));
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
  }
}

export function encodeXrayUser(
  protocol: CoreProtocol,
  user: UserPlan,
  method?: ShadowsocksMethod,
  ivCheck = false,
): User {
  return create(UserSchema, {
    level: user.level,
    email: user.email,
    account: encodeAccount(protocol, user, method, ivCheck),
  });
}

function encodeAccount(
  protocol: CoreProtocol,
  user: UserPlan,
  method: ShadowsocksMethod | undefined,
  ivCheck: boolean,
): TypedMessage {
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
