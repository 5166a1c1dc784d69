// The V2Ray 4.x dialect: `v2ray.core.*` method paths and messages (HandlerService, StatsService).

import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import * as cmd from "../gen/v2ray/app/proxyman_command_pb.ts";
import * as stats from "../gen/v2ray/app/stats_command_pb.ts";
import { API_INBOUND_TAGS } from "./core-types.ts";
import {
  addInboundExtraMs,
  type FlavorApi,
  ignoreResponse,
  type PreparedCall,
  refuseFlavor,
  refuseIfAny,
  toSysStats,
} from "./flavor-api.ts";
import type { BuiltInbound, BuiltUser } from "./inbound-builder/built.ts";
import { typedV2ray } from "./inbound-builder/typed-message.ts";
import { addInboundRequestProblems, alterInboundRequestProblems } from "./request-guards.ts";
import { scanTraffic } from "./traffic-scan.ts";

const HANDLER = "/v2ray.core.app.proxyman.command.HandlerService";
const STATS = "/v2ray.core.app.stats.command.StatsService";

function alter(tag: string, operation: cmd.AlterInboundRequest["operation"]): PreparedCall<void> {
  const request = toBinary(
    cmd.AlterInboundRequestSchema,
    create(cmd.AlterInboundRequestSchema, { tag, operation }),
  );
  refuseIfAny(alterInboundRequestProblems("v2ray", request), "AlterInbound");
  return { method: "AlterInbound", path: `${HANDLER}/AlterInbound`, request, decode: ignoreResponse };
}

export const v2rayApi: FlavorApi = {
  flavor: "v2ray",
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
    if (built.flavor !== "v2ray") return refuseFlavor("v2ray", built.flavor, "AddInbound");
    const request = toBinary(
      cmd.AddInboundRequestSchema,
      create(cmd.AddInboundRequestSchema, { inbound: built.config }),
    );
    refuseIfAny(addInboundRequestProblems("v2ray", request, built), "AddInbound");
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
    if (built.flavor !== "v2ray") return refuseFlavor("v2ray", built.flavor, "AlterInbound");
    return alter(tag, typedV2ray(cmd.AddUserOperationSchema, { user: built.user }));
  },
  removeUser: (tag, email) => alter(tag, typedV2ray(cmd.RemoveUserOperationSchema, { email })),
};

/** QueryStats' request: the same for the generic read and the traffic scan. */
function queryStatsRequest(pattern: string, reset: boolean): Uint8Array {
  return toBinary(stats.QueryStatsRequestSchema, create(stats.QueryStatsRequestSchema, { pattern, reset }));
}
