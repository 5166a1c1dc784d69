// Decodes V2Ray 4.x inbound and user messages into the neutral summaries the guards check.

import { fromBinary } from "@bufbuild/protobuf";
import { ReceiverConfigSchema } from "../../gen/v2ray/app/proxyman_pb.ts";
import type { User } from "../../gen/v2ray/common/protocol_pb.ts";
import type { TypedMessage } from "../../gen/v2ray/common/serial_pb.ts";
import type { InboundHandlerConfig } from "../../gen/v2ray/core_pb.ts";
import * as ss from "../../gen/v2ray/proxy/shadowsocks_pb.ts";
import * as trojan from "../../gen/v2ray/proxy/trojan_pb.ts";
import { ConfigSchema as VlessInboundSchema } from "../../gen/v2ray/proxy/vless_inbound_pb.ts";
import { AccountSchema as VlessAccountSchema } from "../../gen/v2ray/proxy/vless_pb.ts";
import { ConfigSchema as VmessInboundSchema } from "../../gen/v2ray/proxy/vmess_inbound_pb.ts";
import { AccountSchema as VmessAccountSchema } from "../../gen/v2ray/proxy/vmess_pb.ts";
import type { CoreProtocol } from "../core-types.ts";
import { V2RAY_ACCOUNT_TYPES } from "./encode-v2ray.ts";
import { type InboundSummary, tryDecode, type UserSummary } from "./inspect.ts";

const PROXIES: Record<string, CoreProtocol> = {
  [VlessInboundSchema.typeName]: "vless",
  [VmessInboundSchema.typeName]: "vmess",
  [trojan.ServerConfigSchema.typeName]: "trojan",
  [ss.ServerConfigSchema.typeName]: "shadowsocks",
};

export function summarizeV2rayInbound(config: InboundHandlerConfig): InboundSummary {
  const receiver = config.receiverSettings;
  const decoded =
    receiver?.type === ReceiverConfigSchema.typeName
      ? tryDecode(() => fromBinary(ReceiverConfigSchema, receiver.value))
      : undefined;
  const range = decoded?.portRange;
  const proxy = config.proxySettings;
  const protocol = proxy === undefined ? null : (PROXIES[proxy.type] ?? null);
  return {
    tag: config.tag,
    receiverType: receiver?.type ?? null,
    ports: range === undefined ? [] : [[range.From, range.To]],
    listen: decoded?.listen?.address.case ?? "none",
    proxyType: proxy?.type ?? null,
    protocol,
    expectedAccountType: protocol === null ? null : V2RAY_ACCOUNT_TYPES[protocol],
    users: proxy === undefined ? null : (tryDecode(() => proxyUsers(proxy)) ?? null),
    managesUsers: protocol !== null && protocol !== "shadowsocks",
  };
}

function proxyUsers(proxy: TypedMessage): UserSummary[] | null {
  switch (proxy.type) {
    case VlessInboundSchema.typeName:
      return fromBinary(VlessInboundSchema, proxy.value).clients.map(summarizeV2rayUser);
    case VmessInboundSchema.typeName:
      return fromBinary(VmessInboundSchema, proxy.value).user.map(summarizeV2rayUser);
    case trojan.ServerConfigSchema.typeName:
      return fromBinary(trojan.ServerConfigSchema, proxy.value).users.map(summarizeV2rayUser);
    case ss.ServerConfigSchema.typeName: {
      const user = fromBinary(ss.ServerConfigSchema, proxy.value).user;
      return user === undefined ? [] : [summarizeV2rayUser(user)];
    }
    default:
      return null;
  }
}

export function summarizeV2rayUser(user: User): UserSummary {
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
    default:
      return null;
  }
}
