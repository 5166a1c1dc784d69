// Links → decoded → configs for the real Debian clients: the shapes match the probe's working
// configs, and the installed v2ray 4.34 and trojan 1.16 accept them in their offline test modes.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import {
  type JsonObject,
  toSsLocalConfig,
  toTrojanClientConfig,
  toV2rayOutbound,
  UnsupportedByClientError,
} from "../../test/support/link-client-configs.ts";
import { decodeLink } from "../../test/support/link-decoder.ts";
import { requires } from "../../test/support/requires.ts";
import { selfSignedCert } from "../../test/support/self-signed-cert.ts";
import { buildLink } from "./build.ts";
import type { LinkTarget } from "./types.ts";

const ID = "11111111-1111-4111-8111-111111111111";
const at = { host: "127.0.0.1", port: 21109, remark: "r" };
const viaLink = (target: LinkTarget) => decodeLink(buildLink(target));

const vlessWsTls: LinkTarget = {
  protocol: "vless",
  ...at,
  credential: { id: ID, encryption: "none" },
  transport: { type: "ws", path: "/vlws", host: "localhost" },
  security: { type: "tls", sni: "localhost", alpn: ["http/1.1"], fingerprint: "chrome" },
};
const vmessHttp: LinkTarget = {
  protocol: "vmess",
  ...at,
  credential: { id: ID, cipher: "aes-128-gcm" },
  transport: { type: "tcp", http: { host: ["a.example"], path: ["/x"] } },
  security: { type: "none" },
};
const trojanTls: LinkTarget = {
  protocol: "trojan",
  ...at,
  credential: { password: "trojan-pass-a" },
  transport: { type: "tcp" },
  security: { type: "tls", sni: "localhost" },
};
const ssAead: LinkTarget = {
  ...at,
  protocol: "shadowsocks",
  credential: { method: "aes-128-gcm", password: "ss-pass-aes" },
};

test("a vless ws+tls link becomes the probe's working outbound shape", () => {
  assert.deepEqual(toV2rayOutbound(viaLink(vlessWsTls), { tag: "o", caFile: "/ca.pem" }), {
    tag: "o",
    protocol: "vless",
    settings: { vnext: [{ address: "127.0.0.1", port: 21109, users: [{ id: ID, encryption: "none" }] }] },
    streamSettings: {
      network: "ws",
      wsSettings: { path: "/vlws", headers: { Host: "localhost" } },
      security: "tls",
      tlsSettings: {
        serverName: "localhost",
        alpn: ["http/1.1"],
        certificates: [{ usage: "verify", certificateFile: "/ca.pem" }],
      },
    },
  });
});

test("vmess (alterId 0, http header), trojan and shadowsocks outbounds", () => {
  assert.deepEqual(toV2rayOutbound(viaLink(vmessHttp)), {
    tag: "out-vmess",
    protocol: "vmess",
    settings: {
      vnext: [
        { address: "127.0.0.1", port: 21109, users: [{ id: ID, alterId: 0, security: "aes-128-gcm" }] },
      ],
    },
    streamSettings: {
      network: "tcp",
      tcpSettings: { header: { type: "http", request: { path: ["/x"], headers: { Host: ["a.example"] } } } },
    },
  });
  const trojan = toV2rayOutbound(viaLink(trojanTls));
  assert.deepEqual(trojan.settings, {
    servers: [{ address: "127.0.0.1", port: 21109, password: "trojan-pass-a" }],
  });
  assert.deepEqual(trojan.streamSettings, {
    network: "tcp",
    security: "tls",
    tlsSettings: { serverName: "localhost" },
  });
  assert.deepEqual(toV2rayOutbound(viaLink(ssAead)).settings, {
    servers: [{ address: "127.0.0.1", port: 21109, method: "aes-128-gcm", password: "ss-pass-aes" }],
  });
});

test("ss-local and trojan client configs follow probe appendix B", () => {
  assert.deepEqual(toSsLocalConfig(viaLink(ssAead), 21310), {
    server: "127.0.0.1",
    server_port: 21109,
    local_address: "127.0.0.1",
    local_port: 21310,
    password: "ss-pass-aes",
    method: "aes-128-gcm",
    timeout: 60,
  });
  const trojan = toTrojanClientConfig(viaLink(trojanTls), 21300, "/ca.pem");
  assert.equal(trojan.remote_port, 21109);
  assert.deepEqual(trojan.password, ["trojan-pass-a"]);
  assert.deepEqual(trojan.ssl, {
    verify: true,
    verify_hostname: true,
    cert: "/ca.pem",
    sni: "localhost",
    alpn: ["h2", "http/1.1"],
    reuse_session: true,
    session_ticket: false,
    curves: "",
  });
});

test("what the Debian clients cannot do is refused, not approximated", () => {
  const reality = {
    type: "reality",
    sni: "a.example",
    publicKey: "A".repeat(43),
    shortId: "",
    fingerprint: "chrome",
  } as const;
  const ss2022 = {
    ...at,
    protocol: "shadowsocks",
    credential: { method: "2022-blake3-aes-128-gcm", password: "x" },
  } as const;
  const refused: (() => unknown)[] = [
    () => toV2rayOutbound({ ...vlessWsTls, transport: { type: "grpc", serviceName: "s", mode: "gun" } }),
    () => toV2rayOutbound({ ...vlessWsTls, transport: { type: "httpupgrade" } }),
    () => toV2rayOutbound({ ...vlessWsTls, transport: { type: "tcp" }, security: reality }),
    () =>
      toV2rayOutbound({
        ...vlessWsTls,
        transport: { type: "tcp" },
        credential: { id: ID, encryption: "none", flow: "xtls-rprx-vision" },
      }),
    () => toV2rayOutbound(ss2022),
    () => toSsLocalConfig(ss2022, 1),
    () => toSsLocalConfig(trojanTls, 1),
    () => toTrojanClientConfig({ ...trojanTls, security: { type: "none" } }, 1),
    () => toTrojanClientConfig({ ...trojanTls, transport: { type: "ws" } }, 1),
  ];
  for (const convert of refused) assert.throws(convert, UnsupportedByClientError);
});

const dir = mkdtempSync(join(tmpdir(), "portcullis-links-"));
after(() => rmSync(dir, { recursive: true, force: true }));

function check(command: string, args: string[], config: JsonObject, file: string): string {
  writeFileSync(join(dir, file), JSON.stringify(config, null, 1));
  const result = spawnSync(command, [...args, join(dir, file)], { encoding: "utf8", timeout: 15_000 });
  assert.equal(result.status, 0, `${command} rejected ${file}:\n${result.stdout}${result.stderr}`);
  return result.stdout + result.stderr;
}

test(
  "v2ray -test and trojan -t accept configs made from links",
  requires("v2ray", "trojan", "openssl"),
  () => {
    const caFile = selfSignedCert(dir).certFile;
    const v6 = {
      ...vlessWsTls,
      host: "2001:db8::1",
      security: { type: "tls", allowInsecure: true },
    } as const;
    const targets = [
      vlessWsTls,
      vmessHttp,
      trojanTls,
      ssAead,
      v6,
      { ...vmessHttp, transport: { type: "ws" } } as const,
    ];
    const outbounds = targets.map((target, i) => toV2rayOutbound(viaLink(target), { tag: `o${i}`, caFile }));
    const client = {
      log: { loglevel: "warning" },
      inbounds: [{ listen: "127.0.0.1", port: 1080, protocol: "socks", settings: { auth: "noauth" } }],
      outbounds,
    };
    assert.match(check("v2ray", ["-test", "-config"], client, "v2ray-client.json"), /Configuration OK/);
    const trojan = toTrojanClientConfig(viaLink(trojanTls), 21300, caFile);
    assert.match(check("trojan", ["-t", "-c"], trojan, "trojan-client.json"), /looks good/);
  },
);
