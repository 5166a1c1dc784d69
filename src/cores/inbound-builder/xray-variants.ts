// The messages that differ between Xray wire layouts, one schema set per variant: the receiver
// (where stream and sniffing settings sit) and the SS-2022 multi-user config and user/account type.
// Everything else Portcullis sends has the same numbers in every Xray from 1.8 to 26.x.

import { create, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import * as r6 from "../../gen/xray/app/proxyman_r6_pb.ts";
import * as r7 from "../../gen/xray/app/proxyman_r7_pb.ts";
import * as r8 from "../../gen/xray/app/proxyman_r8_pb.ts";
import type { IPOrDomainSchema, PortListSchema } from "../../gen/xray/common/net_pb.ts";
import type { StreamConfigSchema } from "../../gen/xray/transport/internet_pb.ts";
import type { ReceiverVariant } from "../wire-layout.ts";

/** The fields Portcullis sets on a receiver, whatever their numbers on the wire. */
export type XrayReceiver = {
  portList?: MessageInitShape<typeof PortListSchema>;
  listen?: MessageInitShape<typeof IPOrDomainSchema>;
  streamSettings?: MessageInitShape<typeof StreamConfigSchema>;
  sniffingSettings?: {
    enabled: boolean;
    destinationOverride: string[];
    metadataOnly: boolean;
    routeOnly: boolean;
  };
};

type XrayReceiverVariant = Exclude<ReceiverVariant, "v2ray">;

/** All three variants share the full name xray.app.proxyman.ReceiverConfig. */
export const RECEIVER_TYPE_NAME = r6.ReceiverConfigSchema.typeName;

export function encodeReceiver(variant: XrayReceiverVariant, receiver: XrayReceiver): Uint8Array {
  const init = {
    portList: receiver.portList,
    listen: receiver.listen,
    streamSettings: receiver.streamSettings,
    sniffingSettings: receiver.sniffingSettings,
  };
  switch (variant) {
    case "r6":
      return toBinary(r6.ReceiverConfigSchema, create(r6.ReceiverConfigSchema, init));
    case "r7":
      return toBinary(r7.ReceiverConfigSchema, create(r7.ReceiverConfigSchema, init));
    case "r8":
      return toBinary(r8.ReceiverConfigSchema, create(r8.ReceiverConfigSchema, init));
  }
}

/** Reads receiver bytes with the numbers of `variant` (throws on bytes that do not parse). */
export function decodeReceiver(variant: XrayReceiverVariant, bytes: Uint8Array): XrayReceiver {
  const decoded =
    variant === "r6"
      ? fromBinary(r6.ReceiverConfigSchema, bytes)
      : variant === "r7"
        ? fromBinary(r7.ReceiverConfigSchema, bytes)
        : fromBinary(r8.ReceiverConfigSchema, bytes);
  return {
    portList: decoded.portList,
    listen: decoded.listen,
    streamSettings: decoded.streamSettings,
    sniffingSettings: decoded.sniffingSettings,
  };
}
