// Decodes Xray inbound and user messages, read with the numbers of one wire layout, into the
// neutral summaries the guards check (and that the recording test server uses to answer like Xray).

import { create, fromBinary } from "@bufbuild/protobuf";
import { type User, UserSchema } from "../../gen/xray/common/protocol_pb.ts";
import type { TypedMessage } from "../../gen/xray/common/serial_pb.ts";
import type { InboundHandlerConfig } from "../../gen/xray/core_pb.ts";
import * as ss2022Legacy from "../../gen/xray/proxy/shadowsocks_2022_legacy_pb.ts";
import * as ss2022 from "../../gen/xray/proxy/shadowsocks_2022_pb.ts";
import * as ss from "../../gen/xray/proxy/shadowsocks_pb.ts";
import * as trojan from "../../gen/xray/proxy/trojan_pb.ts";
import { ConfigSchema as VlessInboundSchema } from "../../gen/xray/proxy/vless_inbound_pb.ts";
import { AccountSchema as VlessAccountSchema } from "../../gen/xray/proxy/vless_pb.ts";
import { ConfigSchema as VmessInboundSchema } from "../../gen/xray/proxy/vmess_inbound_pb.ts";
import { AccountSchema as VmessAccountSchema } from "../../gen/xray/proxy/vmess_pb.ts";
import type { CoreProtocol } from "../core-types.ts";
import { LAYOUT_FACTS, type WireLayout } from "../wire-layout.ts";
import { xrayAccountType } from "./encode-xray.ts";
import { type InboundSummary, tryDecode, type UserSummary } from "./inspect.ts";
import { typedXray } from "./typed-message.ts";
import { decodeReceiver, RECEIVER_TYPE_NAME } from "./xray-variants.ts";

const PROXIES: Record<string, CoreProtocol> = {
  [VlessInboundSchema.typeName]: "vless",
  [VmessInboundSchema.typeName]: "vmess",
  [trojan.ServerConfigSchema.typeName]: "trojan",
  [ss.ServerConfigSchema.typeName]: "shadowsocks",
  [ss2022.MultiUserServerConfigSchema.typeName]: "shadowsocks",
};

export function summarizeXrayInbound(config: InboundHandlerConfig, layout: WireLayout): InboundSummary {
  const receiver = config.receiverSettings;
  const variant = LAYOUT_FACTS[layout].receiver;
  const decoded =
    receiver !== undefined && receiver.type === RECEIVER_TYPE_NAME && variant !== "v2ray"
      ? tryDecode(() => decodeReceiver(variant, receiver.value))
      : undefined;
  const proxy = config.proxySettings;
  const protocol = proxy === undefined ? null : (PROXIES[proxy.type] ?? null);
  const is2022 = proxy?.type === ss2022.MultiUserServerConfigSchema.typeName;
  const ranges = decoded?.portList?.range ?? [];
  return {
    tag: config.tag,
    receiverType: receiver?.type ?? null,
    ports: ranges.map((range): [number, number] => [range.From ?? 0, range.To ?? 0]),
    listen: decoded?.listen?.address?.case ?? "none",
    proxyType: proxy?.type ?? null,
    protocol,
    expectedAccountType:
      protocol === null ? null : xrayAccountType(protocol, layout, is2022 ? "2022-" : undefined),
    users:
      proxy === undefined
        ? null
        : (tryDecode(() => xrayProxyUsers(proxy, layout)?.map(summarizeXrayUser)) ?? null),
    managesUsers: protocol !== null,
  };
}

/**
 * The users inside an Xray proxy server config as common.protocol.User (pre-25.1 SS-2022 users are
 * wrapped the way AlterInbound carries them); null for a proxy type Portcullis does not know.
 */
export function xrayProxyUsers(proxy: TypedMessage, layout: WireLayout): User[] | null {
  switch (proxy.type) {
    case VlessInboundSchema.typeName:
      return fromBinary(VlessInboundSchema, proxy.value).clients;
    case VmessInboundSchema.typeName:
      return fromBinary(VmessInboundSchema, proxy.value).user;
    case trojan.ServerConfigSchema.typeName:
      return fromBinary(trojan.ServerConfigSchema, proxy.value).users;
    case ss.ServerConfigSchema.typeName:
      return fromBinary(ss.ServerConfigSchema, proxy.value).users;
    case ss2022.MultiUserServerConfigSchema.typeName:
      if (LAYOUT_FACTS[layout].ss2022 === "legacy") {
        return fromBinary(ss2022Legacy.MultiUserServerConfigSchema, proxy.value).users.map(wrapLegacy);
      }
      return fromBinary(ss2022.MultiUserServerConfigSchema, proxy.value).users;
    default:
      return null;
  }
}

function wrapLegacy(user: ss2022Legacy.User): User {
  return create(UserSchema, {
    level: user.level,
    email: user.email,
    account: typedXray(ss2022Legacy.UserSchema, user),
  });
}

export function summarizeXrayUser(user: User): UserSummary {
  const account = user.account;
  return {
    email: user.email,
    accountType: account?.type ?? null,
    credential: account === undefined ? null : (tryDecode(() => credentialOf(account)) ?? null),
  };
}

function credentialOf(account: TypedMessage): string | null {
  switch (account.type) {
    case VlessAccountSchema.typeName:
      return fromBinary(VlessAccountSchema, account.value).id.toLowerCase();
    case VmessAccountSchema.typeName:
      return fromBinary(VmessAccountSchema, account.value).id.toLowerCase();
    case trojan.AccountSchema.typeName:
      return fromBinary(trojan.AccountSchema, account.value).password;
    case ss.AccountSchema.typeName:
      return fromBinary(ss.AccountSchema, account.value).password;
    case ss2022.AccountSchema.typeName:
      return fromBinary(ss2022.AccountSchema, account.value).key;
    case ss2022Legacy.UserSchema.typeName:
      return fromBinary(ss2022Legacy.UserSchema, account.value).key;
    default:
      return null;
  }
}
