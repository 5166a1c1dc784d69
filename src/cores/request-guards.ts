// Decodes the exact request bytes about to be sent and refuses the shapes that panic V2Ray 4.34
// (probe §7): AddInbound without inbound/receiver/proxy/port, AlterInbound without operation,
// a user without account or email.

import { fromBinary } from "@bufbuild/protobuf";
import * as v2cmd from "../gen/v2ray/app/proxyman_command_pb.ts";
import * as xcmd from "../gen/xray/app/proxyman_command_pb.ts";
import type { CoreFlavor, Problem } from "./core-types.ts";
import type { BuiltInbound } from "./inbound-builder/built.ts";
import { inboundGuardProblems } from "./inbound-builder/guards.ts";
import { tryDecode } from "./inbound-builder/inspect.ts";

const OPS = {
  v2ray: {
    add: v2cmd.AddUserOperationSchema,
    remove: v2cmd.RemoveUserOperationSchema,
    alter: v2cmd.AlterInboundRequestSchema,
  },
  xray: {
    add: xcmd.AddUserOperationSchema,
    remove: xcmd.RemoveUserOperationSchema,
    alter: xcmd.AlterInboundRequestSchema,
  },
} as const;

export function addInboundRequestProblems(
  flavor: CoreFlavor,
  request: Uint8Array,
  built: BuiltInbound,
): Problem[] {
  const decoded =
    flavor === "v2ray"
      ? tryDecode(() => fromBinary(v2cmd.AddInboundRequestSchema, request).inbound)
      : tryDecode(() => fromBinary(xcmd.AddInboundRequestSchema, request).inbound);
  if (decoded === undefined) return [{ path: "inbound", message: "is missing (the core would panic)" }];
  if (built.flavor !== flavor) {
    return [{ path: "inbound", message: `was built for ${built.flavor}, not ${flavor}` }];
  }
  return inboundGuardProblems(built);
}

export function alterInboundRequestProblems(flavor: CoreFlavor, request: Uint8Array): Problem[] {
  const schemas = OPS[flavor];
  const alter = tryDecode(() => fromBinary(schemas.alter, request));
  if (alter === undefined) return [{ path: "request", message: "cannot be decoded" }];
  const problems: Problem[] = [];
  if (alter.tag === "") problems.push({ path: "tag", message: "is empty" });
  const operation = alter.operation;
  if (operation === undefined) {
    return [...problems, { path: "operation", message: "is missing (the core would panic)" }];
  }
  if (operation.type === schemas.add.typeName) {
    const user = tryDecode(() => fromBinary(schemas.add, operation.value).user);
    if (user === undefined) {
      problems.push({ path: "operation.user", message: "is missing" });
    } else {
      if (user.account === undefined)
        problems.push({ path: "operation.user.account", message: "is missing" });
      if (user.email === "") problems.push({ path: "operation.user.email", message: "is empty" });
    }
  } else if (operation.type === schemas.remove.typeName) {
    const email = tryDecode(() => fromBinary(schemas.remove, operation.value).email);
    if (email === undefined || email === "") problems.push({ path: "operation.email", message: "is empty" });
  } else {
    problems.push({ path: "operation", message: `has unknown type ${operation.type}` });
  }
  return problems;
}
