// Turns a validated InboundPlan / UserPlan into V2Ray 4.x messages (`v2ray.core.*`), laid out as
// the probe's golden bytes: plain TCP without TLS carries no stream settings at all.

import { create } from "@bufbuild/protobuf";
import { ReceiverConfigSchema, SniffingConfigSchema } from "../../gen/v2ray/app/proxyman_pb.ts";
import { Network } from "../../gen/v2ray/common/net_pb.ts";
import { type User, UserSchema } from "../../gen/v2ray/common/protocol_pb.ts";
import type { TypedMessage } from "../../gen/v2ray/common/serial_pb.ts";
import { type InboundHandlerConfig, InboundHandlerConfigSchema } from "../../gen/v2ray/core_pb.ts";
import {
  CipherType,
  AccountSchema as ShadowsocksAccountSchema,
  ServerConfigSchema as ShadowsocksServerConfigSchema,
} from "../../gen/v2ray/proxy/shadowsocks_pb.ts";
import {
  AccountSchema as TrojanAccountSchema,
  ServerConfigSchema as TrojanServerConfigSchema,
} from "../../gen/v2ray/proxy/trojan_pb.ts";
import { ConfigSchema as VlessInboundSchema } from "../../gen/v2ray/proxy/vless_inbound_pb.ts";
import { AccountSchema as VlessAccountSchema } from "../../gen/v2ray/proxy/vless_pb.ts";
import { ConfigSchema as VmessInboundSchema } from "../../gen/v2ray/proxy/vmess_inbound_pb.ts";
import { AccountSchema as VmessAccountSchema } from "../../gen/v2ray/proxy/vmess_pb.ts";
import {
  type StreamConfig,
  StreamConfigSchema,
  TransportConfigSchema,
} from "../../gen/v2ray/transport/internet_pb.ts";
import { ConfigSchema as TlsConfigSchema } from "../../gen/v2ray/transport/tls_pb.ts";
import { ConfigSchema as WebSocketConfigSchema } from "../../gen/v2ray/transport/websocket_pb.ts";
import type { ShadowsocksMethod } from "../../protocols/shadowsocks.ts";
import type { CoreProtocol } from "../core-types.ts";
import type { InboundPlan, ProxyPlan, StreamPlan, UserPlan } from "./plan.ts";
import { typedV2ray } from "./typed-message.ts";

const utf8 = new TextEncoder();

export const V2RAY_ACCOUNT_TYPES: Record<CoreProtocol, string> = {
  vless: VlessAccountSchema.typeName,
  vmess: VmessAccountSchema.typeName,
  trojan: TrojanAccountSchema.typeName,
  shadowsocks: ShadowsocksAccountSchema.typeName,
};

const CIPHERS: Partial<Record<ShadowsocksMethod, CipherType>> = {
  "aes-128-gcm": CipherType.AES_128_GCM,
  "aes-256-gcm": CipherType.AES_256_GCM,
  "chacha20-poly1305": CipherType.CHACHA20_POLY1305,
};

export function encodeV2rayInbound(plan: InboundPlan): InboundHandlerConfig {
  const receiver = typedV2ray(ReceiverConfigSchema, {
    portRange: { From: plan.port, To: plan.port },
    listen: { address: { case: "ip", value: plan.listen } },
    streamSettings: encodeStream(plan.stream),
    sniffingSettings:
      plan.sniffing === null
        ? undefined
        : create(SniffingConfigSchema, {
            enabled: plan.sniffing.enabled,
            destinationOverride: plan.sniffing.destOverride,
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
      return typedV2ray(VlessInboundSchema, {
        clients: proxy.users.map((u) => encodeV2rayUser("vless", u)),
        decryption: "none",
      });
    case "vmess":
      return typedV2ray(VmessInboundSchema, { user: proxy.users.map((u) => encodeV2rayUser("vmess", u)) });
    case "trojan":
      return typedV2ray(TrojanServerConfigSchema, {
        users: proxy.users.map((u) => encodeV2rayUser("trojan", u)),
      });
    case "shadowsocks":
      return typedV2ray(ShadowsocksServerConfigSchema, {
        user:
          proxy.users[0] === undefined
            ? undefined
            : encodeV2rayUser("shadowsocks", proxy.users[0], proxy.method),
        network: proxy.networks.map((name) => (name === "tcp" ? Network.TCP : Network.UDP)),
      });
  }
}

export function encodeV2rayUser(protocol: CoreProtocol, user: UserPlan, method?: ShadowsocksMethod): User {
  return create(UserSchema, {
    level: user.level,
    email: user.email,
    account: encodeAccount(protocol, user, method),
  });
}

function encodeAccount(protocol: CoreProtocol, user: UserPlan, method?: ShadowsocksMethod): TypedMessage {
  switch (protocol) {
    case "vless":
      return typedV2ray(VlessAccountSchema, { id: user.credential });
    case "vmess":
      return typedV2ray(VmessAccountSchema, { id: user.credential, alterId: 0 });
    case "trojan":
      return typedV2ray(TrojanAccountSchema, { password: user.credential });
    case "shadowsocks":
      return typedV2ray(ShadowsocksAccountSchema, {
        password: user.credential,
        cipherType: (method === undefined ? undefined : CIPHERS[method]) ?? CipherType.UNKNOWN,
      });
  }
}

function encodeStream(stream: StreamPlan): StreamConfig | undefined {
  if (stream.network === "tcp" && stream.security === "none") return undefined;
  const name = stream.network === "ws" ? "websocket" : "tcp";
  const config = create(StreamConfigSchema, { protocolName: name });
  if (stream.ws !== null) {
    const header = Object.entries(stream.ws.headers).map(([key, value]) => ({ key, value }));
    const settings = typedV2ray(WebSocketConfigSchema, {
      path: stream.ws.path,
      header,
      acceptProxyProtocol: stream.ws.acceptProxyProtocol,
    });
    config.transportSettings.push(create(TransportConfigSchema, { protocolName: "websocket", settings }));
  }
  if (stream.tls !== null) {
    const tls = typedV2ray(TlsConfigSchema, {
      certificate: stream.tls.certificates.map((cert) => ({
        Certificate: utf8.encode(cert.certificatePem),
        Key: utf8.encode(cert.keyPem),
      })),
      serverName: stream.tls.serverName,
      nextProtocol: stream.tls.alpn,
    });
    config.securityType = tls.type;
    config.securitySettings.push(tls);
  }
  return config;
}
