// Tells the Xray wire layouts apart by asking the core to parse throw-away messages that fail before
// anything is created: nothing is added, nothing listens, no live inbound is touched, and every
// request is complete (receiver, proxy and operation all present), so none has a crash shape.
//
// - Receiver numbering (AddInbound): the core reads receiver_settings first, then looks up the
//   proxy settings type, which does not exist ("proto: not found"). Receiver bytes the core cannot
//   parse fail earlier with protobuf's "cannot parse invalid wire-format data". So the error text
//   says whether that core's ReceiverConfig accepted the bytes. A control (bytes no layout parses)
//   proves the order on this very core before the answers are trusted.
//   · field 3 = StreamConfig{security_type "o"}: a StreamConfig in r6 (25.10+); in r7/r8 field 3 is
//     AllocationStrategy, whose refresh (3) then holds 0x6f = field 13 with wire type 7: invalid.
//   · field 7 = SniffingConfig{destination_override "é"}: a SniffingConfig in r7; in r8 field 7 is
//     the packed enum domain_override, and the varint bytes end in 0xc3 0xa9, a truncated varint.
// - Type names (AlterInbound): the core resolves the operation type before it looks for the inbound;
//   a type it knows that is no operation answers "not an inbound operation", an unknown one "unknown
//   operation > proto: not found". Asked for shadowsocks_2022.Account (25.1+), shadowsocks_2022.User
//   (before 25.1) and transport xtls.Config (removed in 1.8.0).
// - Capabilities: read-only calls that older releases answer UNIMPLEMENTED.

import { create, toBinary } from "@bufbuild/protobuf";
import * as cmd from "../gen/xray/app/proxyman_command_pb.ts";
import * as r6 from "../gen/xray/app/proxyman_r6_pb.ts";
import * as r7 from "../gen/xray/app/proxyman_r7_pb.ts";
import * as stats from "../gen/xray/app/stats_command_pb.ts";
import { AppError, CoreUnsupportedError } from "../lib/errors.ts";
import { ignoreResponse, type PreparedCall } from "./flavor-api.ts";
import { RECEIVER_TYPE_NAME } from "./inbound-builder/xray-variants.ts";
import {
  type CoreCapability,
  type CoreProfile,
  type ReceiverVariant,
  type Ss2022Variant,
  xrayLayoutOf,
} from "./wire-layout.ts";

/** The tag of every probe; never registered (each probe fails before the core gets that far). */
export const PROBE_TAG = "portcullis-layout-probe";
/** A type no core knows: the proxy settings of every receiver probe, the baseline of type probes. */
export const NO_SUCH_TYPE = "portcullis.probe.NoSuchMessage";

const HANDLER = "/xray.app.proxyman.command.HandlerService";
const STATS = "/xray.app.stats.command.StatsService";

export const RECEIVER_PROBES = {
  /** 0x0f: field 1 with wire type 7. No layout parses it. */
  control: new Uint8Array([0x0f]),
  streamAt3: toBinary(
    r6.ReceiverConfigSchema,
    create(r6.ReceiverConfigSchema, { streamSettings: { securityType: "o" } }),
  ),
  sniffingAt7: toBinary(
    r7.ReceiverConfigSchema,
    create(r7.ReceiverConfigSchema, { sniffingSettings: { destinationOverride: ["é"] } }),
  ),
} as const;

export const TYPE_PROBES = {
  ss2022Account: "xray.proxy.shadowsocks_2022.Account",
  ss2022User: "xray.proxy.shadowsocks_2022.User",
  xtls: "xray.transport.internet.xtls.Config",
} as const;

export function receiverProbe(receiver: Uint8Array): PreparedCall<void> {
  const request = create(cmd.AddInboundRequestSchema, {
    inbound: {
      tag: PROBE_TAG,
      receiverSettings: { type: RECEIVER_TYPE_NAME, value: receiver },
      proxySettings: { type: NO_SUCH_TYPE, value: new Uint8Array() },
    },
  });
  return {
    method: "AddInbound (layout probe)",
    path: `${HANDLER}/AddInbound`,
    request: toBinary(cmd.AddInboundRequestSchema, request),
    decode: ignoreResponse,
  };
}

export function typeProbe(typeName: string): PreparedCall<void> {
  const request = create(cmd.AlterInboundRequestSchema, {
    tag: PROBE_TAG,
    operation: { type: typeName, value: new Uint8Array() },
  });
  return {
    method: "AlterInbound (layout probe)",
    path: `${HANDLER}/AlterInbound`,
    request: toBinary(cmd.AlterInboundRequestSchema, request),
    decode: ignoreResponse,
  };
}

export const CAPABILITY_PROBES: Record<CoreCapability, PreparedCall<void>> = {
  listing: {
    method: "ListInbounds (capability probe)",
    path: `${HANDLER}/ListInbounds`,
    request: toBinary(
      cmd.ListInboundsRequestSchema,
      create(cmd.ListInboundsRequestSchema, { isOnlyTags: true }),
    ),
    decode: ignoreResponse,
  },
  online_users: {
    method: "GetAllOnlineUsers (capability probe)",
    path: `${STATS}/GetAllOnlineUsers`,
    request: toBinary(stats.GetAllOnlineUsersRequestSchema, create(stats.GetAllOnlineUsersRequestSchema)),
    decode: ignoreResponse,
  },
};

/** Sends one probe; the channel's errors (AppError) come back as thrown. */
export type ProbeSender = (call: PreparedCall<void>) => Promise<void>;

/** What the core answered: nothing (success), UNIMPLEMENTED, or an error text. */
type Answer = { kind: "ok" } | { kind: "unimplemented" } | { kind: "refused"; text: string };

async function ask(send: ProbeSender, call: PreparedCall<void>): Promise<Answer> {
  try {
    await send(call);
    return { kind: "ok" };
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    if (error.code === "core_unsupported") return { kind: "unimplemented" };
    // Unreachable, timed out, refused by a proxy in front: no answer about the layout.
    if (!["core_error", "core_not_found", "core_conflict"].includes(error.code)) throw error;
    return { kind: "refused", text: coreText(error) };
  }
}

/** The core's own words (the Go error chain), without Portcullis' "core … Method:" prefix. */
function coreText(error: AppError): string {
  const cause = error.cause as { details?: unknown } | undefined;
  return typeof cause?.details === "string" ? cause.details : error.message;
}

const WIRE_FORMAT_ERROR = /invalid wire-format|cannot parse/i;

function unexpected(what: string, answer: Answer): CoreUnsupportedError {
  const said = answer.kind === "refused" ? `"${answer.text}"` : answer.kind;
  return new CoreUnsupportedError(
    `the core did not answer the layout probe as Xray 1.8 to 26.x do (${what}: ${said}); pin the server's wire_layout if it is a build Portcullis knows`,
  );
}

/** Probes an Xray core (one that answers on the xray.* namespace) for its layout and capabilities. */
export async function probeXrayProfile(send: ProbeSender): Promise<CoreProfile> {
  const layout = xrayLayoutOf(await probeReceiver(send), await probeSs2022(send));
  if (layout === undefined) {
    throw new CoreUnsupportedError(
      "the core's receiver numbering and SS-2022 user type match no Xray release Portcullis knows; pin the server's wire_layout",
    );
  }
  return { layout, capabilities: await probeCapabilities(send) };
}

async function probeReceiver(send: ProbeSender): Promise<ReceiverVariant> {
  const control = await askReceiver(send, RECEIVER_PROBES.control);
  if (control.kind === "unimplemented") {
    throw new CoreUnsupportedError(
      'the core\'s API has no HandlerService: add "HandlerService" to api.services in its config',
    );
  }
  if (control.kind !== "refused" || !WIRE_FORMAT_ERROR.test(control.text)) {
    throw unexpected("unparseable receiver", control);
  }
  if (isAccepted(await askReceiver(send, RECEIVER_PROBES.streamAt3))) return "r6";
  if (isAccepted(await askReceiver(send, RECEIVER_PROBES.sniffingAt7))) return "r7";
  return "r8";
}

async function askReceiver(send: ProbeSender, receiver: Uint8Array): Promise<Answer> {
  const answer = await ask(send, receiverProbe(receiver));
  // Cannot happen (the proxy type does not exist), but if a core ever created it, take it away.
  if (answer.kind === "ok") await ask(send, removeProbe());
  return answer;
}

function isAccepted(answer: Answer): boolean {
  return answer.kind === "ok" || (answer.kind === "refused" && !WIRE_FORMAT_ERROR.test(answer.text));
}

function removeProbe(): PreparedCall<void> {
  const request = create(cmd.RemoveInboundRequestSchema, { tag: PROBE_TAG });
  return {
    method: "RemoveInbound (layout probe)",
    path: `${HANDLER}/RemoveInbound`,
    request: toBinary(cmd.RemoveInboundRequestSchema, request),
    decode: ignoreResponse,
  };
}

async function probeSs2022(send: ProbeSender): Promise<Ss2022Variant> {
  const baseline = await ask(send, typeProbe(NO_SUCH_TYPE));
  if (baseline.kind !== "refused") throw unexpected("unknown operation type", baseline);
  const knows = async (typeName: string) => {
    const answer = await ask(send, typeProbe(typeName));
    if (answer.kind !== "refused") throw unexpected(typeName, answer);
    return answer.text.split(typeName).join(NO_SUCH_TYPE) !== baseline.text;
  };
  if (await knows(TYPE_PROBES.xtls)) {
    throw new CoreUnsupportedError("Xray older than 1.8 (it still has the XTLS transport) is not supported");
  }
  const hasAccount = await knows(TYPE_PROBES.ss2022Account);
  const hasUser = await knows(TYPE_PROBES.ss2022User);
  if (hasAccount !== hasUser) return hasAccount ? "account" : "legacy";
  throw new CoreUnsupportedError(
    `the core knows ${hasAccount ? "both" : "neither"} of the SS-2022 user types Portcullis can send; pin the server's wire_layout`,
  );
}

export async function probeCapabilities(send: ProbeSender): Promise<CoreCapability[]> {
  const found: CoreCapability[] = [];
  for (const [capability, call] of Object.entries(CAPABILITY_PROBES) as [
    CoreCapability,
    PreparedCall<void>,
  ][]) {
    const answer = await ask(send, call);
    if (answer.kind === "ok") found.push(capability);
    else if (answer.kind === "refused") throw unexpected(call.method, answer);
  }
  return found;
}
