// What the builder hands the client: a finished protobuf message for one wire layout plus the facts
// the client's guards check. The client accepts nothing else, so the builder is the only producer.

import type { User as V2User } from "../../gen/v2ray/common/protocol_pb.ts";
import type { InboundHandlerConfig as V2InboundHandlerConfig } from "../../gen/v2ray/core_pb.ts";
import type { User as XrayUser } from "../../gen/xray/common/protocol_pb.ts";
import type { InboundHandlerConfig as XrayInboundHandlerConfig } from "../../gen/xray/core_pb.ts";
import type { CoreProtocol, InboundRef, Problem } from "../core-types.ts";
import type { WireLayout } from "../wire-layout.ts";

type InboundFacts = {
  /** The layout the bytes were encoded for; the client refuses to send them to a core of another. */
  layout: WireLayout;
  ref: InboundRef;
  port: number;
  emails: string[];
  /**
   * Set by withInlineUsers only: the users appended inline were guarded one by one as they were
   * encoded (inline-users.ts), so the request guard checks the inbound as it was before them and
   * takes these findings instead of decoding tens of thousands of users again.
   */
  inline?: InlineCheck;
};

/** What appending users inline found: the guard's problems for them, and their secrets to redact. */
export type InlineCheck = {
  /** The proxy settings' bytes before any user was appended. */
  baseProxyValue: Uint8Array;
  problems: Problem[];
  credentials: string[];
};

export type BuiltInbound =
  | (InboundFacts & { flavor: "v2ray"; config: V2InboundHandlerConfig })
  | (InboundFacts & { flavor: "xray"; config: XrayInboundHandlerConfig });

type UserFacts = {
  layout: WireLayout;
  protocol: CoreProtocol;
  email: string;
  /** The account TypedMessage type the user carries, e.g. "xray.proxy.vless.Account". */
  accountType: string;
  /** The UUID or password, so error texts that echo it can be redacted. */
  credential: string;
};

export type BuiltUser =
  | (UserFacts & { flavor: "v2ray"; user: V2User })
  | (UserFacts & { flavor: "xray"; user: XrayUser });
