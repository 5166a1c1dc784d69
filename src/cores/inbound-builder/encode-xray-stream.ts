// Xray stream settings: tcp / websocket / grpc / httpupgrade / xhttp transports under none, TLS or
// REALITY. XHTTP's settings are written per layout: field 11 only where every release reads it so.

import { create } from "@bufbuild/protobuf";
import type { TypedMessage } from "../../gen/xray/common/serial_pb.ts";
import { ConfigSchema as GrpcConfigSchema } from "../../gen/xray/transport/grpc_pb.ts";
import { ConfigSchema as HttpUpgradeConfigSchema } from "../../gen/xray/transport/httpupgrade_pb.ts";
import {
  type StreamConfig,
  StreamConfigSchema,
  TransportConfigSchema,
} from "../../gen/xray/transport/internet_pb.ts";
import { ConfigSchema as RealityConfigSchema } from "../../gen/xray/transport/reality_pb.ts";
import { ConfigSchema as SplitHttpConfigSchema } from "../../gen/xray/transport/splithttp_pb.ts";
import { ConfigSchema as TlsConfigSchema } from "../../gen/xray/transport/tls_pb.ts";
import { ConfigSchema as WebSocketConfigSchema } from "../../gen/xray/transport/websocket_pb.ts";
import { LAYOUT_FACTS, type WireLayout } from "../wire-layout.ts";
import type { RealityPlan, StreamPlan, TlsPlan, XhttpPlan } from "./plan.ts";
import { typedXray } from "./typed-message.ts";

const utf8 = new TextEncoder();

const PROTOCOL_NAMES: Record<StreamPlan["network"], string> = {
  tcp: "tcp",
  ws: "websocket",
  grpc: "grpc",
  httpupgrade: "httpupgrade",
  // Xray's loader turns "xhttp" and "splithttp" into the transport's registered name.
  xhttp: "splithttp",
};

export function encodeXrayStream(stream: StreamPlan, layout: WireLayout): StreamConfig | undefined {
  if (stream.network === "tcp" && stream.security === "none") return undefined;
  const protocolName = PROTOCOL_NAMES[stream.network];
  const config = create(StreamConfigSchema, { protocolName });
  const settings = transportSettings(stream, layout);
  if (settings !== undefined) {
    config.transportSettings.push(create(TransportConfigSchema, { protocolName, settings }));
  }
  const security =
    stream.tls !== null ? tls(stream.tls) : stream.reality !== null ? reality(stream.reality) : undefined;
  if (security !== undefined) {
    config.securityType = security.type;
    config.securitySettings.push(security);
  }
  return config;
}

function transportSettings(stream: StreamPlan, layout: WireLayout): TypedMessage | undefined {
  if (stream.xhttp !== null) return xhttp(stream.xhttp, layout);
  if (stream.ws !== null) {
    const { host, path, headers, acceptProxyProtocol } = stream.ws;
    return typedXray(WebSocketConfigSchema, { host, path, header: headers, acceptProxyProtocol });
  }
  if (stream.httpupgrade !== null) {
    const { host, path, headers, acceptProxyProtocol } = stream.httpupgrade;
    return typedXray(HttpUpgradeConfigSchema, { host, path, header: headers, acceptProxyProtocol });
  }
  if (stream.grpc !== null) {
    return typedXray(GrpcConfigSchema, { host: stream.grpc.authority, serviceName: stream.grpc.serviceName });
  }
  return undefined;
}

function xhttp(plan: XhttpPlan, layout: WireLayout): TypedMessage {
  const variant = LAYOUT_FACTS[layout].xhttp;
  if (variant === "none") throw new Error(`${layout} has no XHTTP encoding`);
  if (variant === "base" && plan.scStreamUpServerSecs !== null) {
    throw new Error(`${layout}: scStreamUpServerSecs has no single field number`);
  }
  return typedXray(SplitHttpConfigSchema, {
    host: plan.host,
    path: plan.path,
    mode: plan.mode,
    noSSEHeader: plan.noSSEHeader,
    scMaxBufferedPosts: BigInt(plan.scMaxBufferedPosts),
    ...(plan.xPaddingBytes === null ? {} : { xPaddingBytes: plan.xPaddingBytes }),
    ...(plan.scMaxEachPostBytes === null ? {} : { scMaxEachPostBytes: plan.scMaxEachPostBytes }),
    ...(plan.scStreamUpServerSecs === null ? {} : { scStreamUpServerSecs: plan.scStreamUpServerSecs }),
  });
}

function tls(plan: TlsPlan): TypedMessage {
  return typedXray(TlsConfigSchema, {
    certificate: plan.certificates.map((cert) => ({
      certificate: utf8.encode(cert.certificatePem),
      key: utf8.encode(cert.keyPem),
      // Inline PEM has no file to reload; Xray's JSON loader sets the same.
      OneTimeLoading: true,
    })),
    serverName: plan.serverName,
    nextProtocol: plan.alpn,
    minVersion: plan.minVersion,
    maxVersion: plan.maxVersion,
    cipherSuites: plan.cipherSuites,
    rejectUnknownSni: plan.rejectUnknownSni,
  });
}

function reality(plan: RealityPlan): TypedMessage {
  return typedXray(RealityConfigSchema, {
    show: plan.show,
    dest: plan.dest,
    type: plan.type,
    xver: BigInt(plan.xver),
    serverNames: plan.serverNames,
    privateKey: plan.privateKey,
    minClientVer: plan.minClientVer,
    maxClientVer: plan.maxClientVer,
    maxTimeDiff: BigInt(plan.maxTimeDiffMs),
    shortIds: plan.shortIds,
  });
}
