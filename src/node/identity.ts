// What `portcullis node join` leaves in the agent's directory and `node run` reads: the panel CA it
// pinned, its own key and certificate (one file, so a renewal swaps both in one rename), and which
// server it is. Written 0600, atomically.

import { existsSync } from "node:fs";
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { writeFileAtomic } from "./atomic-file.ts";

export type NodeIdentity = {
  serverId: string;
  panelUrl: string;
  caFingerprint: string;
  caPem: string;
  certPem: string;
  keyPem: string;
};

const FILES = { meta: "node.json", ca: "panel-ca.pem", pair: "agent.pem" } as const;

export function isJoined(dir: string): boolean {
  return existsSync(join(dir, FILES.meta)) && existsSync(join(dir, FILES.pair));
}

export async function readIdentity(dir: string): Promise<NodeIdentity> {
  const meta = JSON.parse(await readFile(join(dir, FILES.meta), "utf8")) as {
    server_id: string;
    panel_url: string;
    ca_fingerprint: string;
  };
  return {
    serverId: meta.server_id,
    panelUrl: meta.panel_url,
    caFingerprint: meta.ca_fingerprint,
    caPem: await readFile(join(dir, FILES.ca), "utf8"),
    ...splitPair(await readFile(join(dir, FILES.pair), "utf8")),
  };
}

function splitPair(text: string): { certPem: string; keyPem: string } {
  const cert = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/.exec(text)?.[0];
  const key = /-----BEGIN PRIVATE KEY-----[\s\S]+?-----END PRIVATE KEY-----\n?/.exec(text)?.[0];
  if (cert === undefined || key === undefined) throw new Error(`${FILES.pair} holds no certificate and key`);
  return { certPem: cert, keyPem: key };
}

/** Key and certificate first, the meta file last: a directory with node.json is a complete one. */
export async function writeIdentity(dir: string, identity: NodeIdentity): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFileAtomic(join(dir, FILES.ca), identity.caPem, 0o644);
  await writeCertificate(dir, identity.certPem, identity.keyPem);
  const meta = {
    server_id: identity.serverId,
    panel_url: identity.panelUrl,
    ca_fingerprint: identity.caFingerprint,
  };
  await writeFileAtomic(join(dir, FILES.meta), `${JSON.stringify(meta, null, 2)}\n`, 0o600);
}

/** The certificate and its key in one file: a renewal replaces both or neither. */
export async function writeCertificate(dir: string, certPem: string, keyPem: string): Promise<void> {
  await writeFileAtomic(join(dir, FILES.pair), `${certPem.trim()}\n${keyPem.trim()}\n`, 0o600);
}
