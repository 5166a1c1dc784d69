// Reads tlsSettings (certificates as inline PEM, as Xray's `certificate`/`key` string or line
// arrays) and realitySettings (Xray only) of a server inbound.

import { joinPath } from "../../lib/json.ts";
import type { CoreFlavor, Problem } from "../core-types.ts";
import { ObjectReader } from "./json-reader.ts";
import type { RealityPlan, TlsPlan } from "./plan.ts";
import { decodeRawUrlBase64, parseClientVersion, parseShortId } from "./values.ts";

const XRAY_ONLY_TLS = ["minVersion", "maxVersion", "cipherSuites", "rejectUnknownSni"] as const;

export function readTls(
  settings: ObjectReader | undefined,
  path: string,
  problems: Problem[],
  flavor: CoreFlavor,
): TlsPlan | undefined {
  if (settings === undefined) {
    problems.push({ path, message: "is required with security tls (it holds the certificate)" });
    return undefined;
  }
  const before = problems.length;
  if (flavor === "v2ray") {
    for (const key of XRAY_ONLY_TLS) settings.unsupported(key, "not supported by V2Ray 4.x");
  }
  const plan: TlsPlan = {
    certificates: readCertificates(settings),
    serverName: settings.string("serverName") ?? "",
    alpn: settings.strings("alpn", true) ?? [],
    minVersion: settings.string("minVersion") ?? "",
    maxVersion: settings.string("maxVersion") ?? "",
    cipherSuites: settings.string("cipherSuites") ?? "",
    rejectUnknownSni: settings.bool("rejectUnknownSni") ?? false,
  };
  // Client-side options that a server inbound ignores.
  settings.harmless("allowInsecure", "fingerprint", "disableSystemRoot", "enableSessionResumption");
  settings.finish();
  return problems.length === before ? plan : undefined;
}

function readCertificates(settings: ObjectReader): TlsPlan["certificates"] {
  const list = settings.array("certificates") ?? [];
  if (list.length === 0) settings.problem("certificates", "needs at least one certificate with its key");
  const out: TlsPlan["certificates"] = [];
  list.forEach((item, index) => {
    const cert = ObjectReader.of(item, joinPath(settings.at("certificates"), index), settings.problems);
    if (cert === undefined) return;
    const files = "files on the core host are not supported: paste the PEM into certificate and key";
    cert.unsupported("certificateFile", files);
    cert.unsupported("keyFile", files);
    const usage = cert.string("usage") ?? "encipherment";
    if (usage !== "encipherment") cert.problem("usage", 'only "encipherment" is supported on a server');
    cert.unsupported("ocspStapling", "not supported by Portcullis");
    cert.unsupported("buildChain", "not supported by Portcullis");
    cert.harmless("oneTimeLoading");
    const certificatePem = readPem(cert, "certificate", /-----BEGIN CERTIFICATE-----/);
    const keyPem = readPem(cert, "key", /-----BEGIN [A-Z ]*PRIVATE KEY-----/);
    cert.finish();
    if (certificatePem !== undefined && keyPem !== undefined) out.push({ certificatePem, keyPem });
  });
  return out;
}

/** Xray joins an array of lines with "\n"; a single string is taken as is. */
function readPem(cert: ObjectReader, key: string, header: RegExp): string | undefined {
  const lines = cert.strings(key, true);
  if (lines === undefined) {
    if (!cert.has(key)) cert.problem(key, "is required (PEM text)");
    return undefined;
  }
  const pem = lines.join("\n");
  if (!header.test(pem)) {
    cert.problem(key, "must be PEM text");
    return undefined;
  }
  return pem;
}

export function readReality(
  settings: ObjectReader | undefined,
  path: string,
  problems: Problem[],
): RealityPlan | undefined {
  if (settings === undefined) {
    problems.push({ path, message: "is required with security reality" });
    return undefined;
  }
  const before = problems.length;
  const plan: RealityPlan = {
    show: settings.bool("show") ?? false,
    ...readTarget(settings),
    xver: settings.int("xver", 0, 2) ?? 0,
    serverNames: settings.strings("serverNames") ?? [],
    privateKey: readPrivateKey(settings),
    minClientVer: readVersion(settings, "minClientVer"),
    maxClientVer: readVersion(settings, "maxClientVer"),
    maxTimeDiffMs: settings.int("maxTimeDiff", 0, Number.MAX_SAFE_INTEGER) ?? 0,
    shortIds: readShortIds(settings),
  };
  if (plan.serverNames.length === 0) settings.problem("serverNames", "needs at least one name");
  // Client-side hints (also what 3x-ui keeps under "settings"); a server inbound ignores them.
  settings.harmless("publicKey", "password", "fingerprint", "serverName", "shortId", "spiderX", "settings");
  for (const key of ["masterKeyLog", "limitFallbackUpload", "limitFallbackDownload"]) {
    settings.unsupported(key, "not supported by Portcullis");
  }
  settings.finish();
  return problems.length === before ? plan : undefined;
}

function readTarget(settings: ObjectReader): Pick<RealityPlan, "dest" | "type"> {
  const key = settings.has("target") ? "target" : "dest";
  settings.raw(key === "target" ? "dest" : "target");
  const raw = settings.raw(key);
  let dest = typeof raw === "number" ? String(raw) : typeof raw === "string" ? raw : "";
  if (/^\d+$/.test(dest)) dest = `127.0.0.1:${dest}`;
  const explicit = settings.string("type");
  const type = explicit ?? (dest.startsWith("/") || dest.startsWith("@") ? "unix" : "tcp");
  const hostPort = /^(\[[0-9a-fA-F:.]+\]|[^:\s]+):\d{1,5}$/;
  if (type !== "tcp" && type !== "unix") settings.problem("type", 'must be "tcp" or "unix"');
  else if (dest === "" || (type === "tcp" && !hostPort.test(dest))) {
    settings.problem(key, 'must be "host:port" or a port number');
  }
  return { dest, type: type === "unix" ? "unix" : "tcp" };
}

function readPrivateKey(settings: ObjectReader): Uint8Array {
  const text = settings.string("privateKey");
  const key = text === undefined ? undefined : decodeRawUrlBase64(text);
  if (key === undefined || key.length !== 32) {
    settings.problem("privateKey", "must be the x25519 private key from `xray x25519` (base64url, 32 bytes)");
    return new Uint8Array();
  }
  return key;
}

function readVersion(settings: ObjectReader, key: string): Uint8Array {
  const text = settings.string(key);
  if (text === undefined || text === "") return new Uint8Array();
  const version = parseClientVersion(text);
  if (version === undefined) settings.problem(key, 'must be "x.y.z" with numbers below 256');
  return version ?? new Uint8Array();
}

function readShortIds(settings: ObjectReader): Uint8Array[] {
  const ids = settings.strings("shortIds") ?? [];
  if (ids.length === 0) settings.problem("shortIds", 'needs at least one id ("" allows an empty one)');
  return ids.flatMap((id, index) => {
    const bytes = parseShortId(id);
    if (bytes === undefined) {
      settings.problems.push({
        path: joinPath(settings.at("shortIds"), index),
        message: "must be up to 16 hex digits, an even number of them",
      });
      return [];
    }
    return [bytes];
  });
}
