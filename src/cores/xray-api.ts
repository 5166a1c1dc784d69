// The Xray dialect: `xray.*` method paths and messages, including the listing calls V2Ray 4.x and
// Xray before 25.x lack. One per wire layout: listings are read with that layout's numbers.

import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import * as cmd from "../gen/xray/app/proxyman_command_pb.ts";
import * as stats from "../gen/xray/app/stats_command_pb.ts";
import { API_INBOUND_TAGS, type CoreInboundInfo, type CoreInboundUser } from "./core-types.ts";
import {
  addInboundExtraMs,
  type FlavorApi,
  ignoreResponse,
  type PreparedCall,
  refuseFlavor,
  refuseIfAny,
  refuseLayout,
  toSysStats,
} from "./flavor-api.ts";
import type { BuiltInbound, BuiltUser } from "./inbound-builder/built.ts";
import { summarizeXrayInbound, summarizeXrayUser } from "./inbound-builder/inspect-xray.ts";
import { typedXray } from "./inbound-builder/typed-message.ts";
import { addInboundRequestProblems, alterInboundRequestProblems } from "./request-guards.ts";
import { scanTraffic } from "./traffic-scan.ts";
import type { WireLayout } from "./wire-layout.ts";

const HANDLER = "/xray.app.proxyman.command.HandlerService";
const STATS = "/xray.app.stats.command.StatsService";

function alter(tag: string, operation: cmd.AlterInboundRequest["operation"]): PreparedCall<void> {
  const request = toBinary(
    cmd.AlterInboundRequestSchema,
    create(cmd.AlterInboundRequestSchema, { tag, operation }),
  );
  refuseIfAny(alterInboundRequestProblems("xray", request), "AlterInbound");
  return { method: "AlterInbound", path: `${HANDLER}/AlterInbound`, request, decode: ignoreResponse };
}

function inboundInfo(
  config: cmd.ListInboundsResponse["inbounds"][number],
  layout: WireLayout,
): CoreInboundInfo {
  const summary = summarizeXrayInbound(config, layout);
  return {
    tag: summary.tag,
    protocol: summary.protocol,
    proxyType: summary.proxyType,
    portRanges: summary.ports,
  };
}

function inboundUser(user: cmd.GetInboundUserResponse["users"][number]): CoreInboundUser {
  const summary = summarizeXrayUser(user);
  return {
    email: user.email,
    level: user.level,
    accountType: summary.accountType,
    credential: summary.credential,
  };
}

function userRequest(tag: string): Uint8Array {
  return toBinary(
    cmd.GetInboundUserRequestSchema,
    create(cmd.GetInboundUserRequestSchema, { tag, email: "" }),
  );
}

export const xrayApiFor = (layout: WireLayout): FlavorApi => ({
  flavor: "xray",
  getSysStats: () => ({
    method: "GetSysStats",
    path: `${STATS}/GetSysStats`,
    request: toBinary(stats.SysStatsRequestSchema, create(stats.SysStatsRequestSchema)),
    decode: (bytes) => toSysStats(fromBinary(stats.SysStatsResponseSchema, bytes)),
  }),
  queryStats: (pattern, reset) => ({
    method: "QueryStats",
    path: `${STATS}/QueryStats`,
    request: queryStatsRequest(pattern, reset),
    decode: (bytes) =>
      fromBinary(stats.QueryStatsResponseSchema, bytes).stat.map((stat) => ({
        name: stat.name,
        value: stat.value,
      })),
  }),
  queryTraffic: (pattern, reset) => ({
    method: "QueryStats",
    path: `${STATS}/QueryStats`,
    request: queryStatsRequest(pattern, reset),
    decode: (bytes) => scanTraffic(bytes, API_INBOUND_TAGS),
  }),
  addInbound: (built: BuiltInbound) => {
    if (built.flavor !== "xray") return refuseFlavor("xray", built.flavor, "AddInbound");
    if (built.layout !== layout) return refuseLayout(layout, built.layout, "AddInbound");
    const request = toBinary(
      cmd.AddInboundRequestSchema,
      create(cmd.AddInboundRequestSchema, { inbound: built.config }),
    );
    refuseIfAny(addInboundRequestProblems("xray", request, built), "AddInbound");
    return {
      method: "AddInbound",
      path: `${HANDLER}/AddInbound`,
      request,
      decode: ignoreResponse,
      extraTimeoutMs: addInboundExtraMs(built.emails.length),
    };
  },
  removeInbound: (tag) => {
    refuseIfAny(tag === "" ? [{ path: "tag", message: "is empty" }] : [], "RemoveInbound");
    const request = toBinary(cmd.RemoveInboundRequestSchema, create(cmd.RemoveInboundRequestSchema, { tag }));
    return { method: "RemoveInbound", path: `${HANDLER}/RemoveInbound`, request, decode: ignoreResponse };
  },
  addUser: (tag, built: BuiltUser) => {
    if (built.flavor !== "xray") return refuseFlavor("xray", built.flavor, "AlterInbound");
    if (built.layout !== layout) return refuseLayout(layout, built.layout, "AlterInbound");
    return alter(tag, typedXray(cmd.AddUserOperationSchema, { user: built.user }));
  },
  removeUser: (tag, email) => alter(tag, typedXray(cmd.RemoveUserOperationSchema, { email })),
  listInbounds: () => ({
    method: "ListInbounds",
    path: `${HANDLER}/ListInbounds`,
    request: toBinary(
      cmd.ListInboundsRequestSchema,
      create(cmd.ListInboundsRequestSchema, { isOnlyTags: false }),
    ),
    decode: (bytes) =>
      fromBinary(cmd.ListInboundsResponseSchema, bytes).inbounds.map((config) => inboundInfo(config, layout)),
  }),
  listInboundUsers: (tag) => ({
    method: "GetInboundUsers",
    path: `${HANDLER}/GetInboundUsers`,
    request: userRequest(tag),
    decode: (bytes) => fromBinary(cmd.GetInboundUserResponseSchema, bytes).users.map(inboundUser),
  }),
  countInboundUsers: (tag) => ({
    method: "GetInboundUsersCount",
    path: `${HANDLER}/GetInboundUsersCount`,
    request: userRequest(tag),
    decode: (bytes) => Number(fromBinary(cmd.GetInboundUsersCountResponseSchema, bytes).count),
  }),
  onlineUsers: () => ({
    method: "GetAllOnlineUsers",
    path: `${STATS}/GetAllOnlineUsers`,
    request: toBinary(stats.GetAllOnlineUsersRequestSchema, create(stats.GetAllOnlineUsersRequestSchema)),
    decode: (bytes) => fromBinary(stats.GetAllOnlineUsersResponseSchema, bytes).users,
  }),
});

/** QueryStats' request: the same for the generic read and the traffic scan. */
function queryStatsRequest(pattern: string, reset: boolean): Uint8Array {
  return toBinary(stats.QueryStatsRequestSchema, create(stats.QueryStatsRequestSchema, { pattern, reset }));
}
