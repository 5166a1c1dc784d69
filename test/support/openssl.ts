// The openssl CLI as an independent judge in tests: it makes key pairs to import, prints what a
// certificate says, and verifies chains, so our own parsing never grades itself.
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export async function openssl(args: string[], cwd?: string): Promise<string> {
  const { stdout } = await run("openssl", args, { cwd });
  return stdout;
}

/** Runs `work` in a fresh temporary directory that is removed afterwards. */
export async function inTempDir<T>(work: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), "portcullis-openssl-"));
  try {
    return await work(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export type KeyPairFiles = { certificatePem: string; privateKeyPem: string };

/** A self-signed EC P-256 certificate made by openssl with the given subjectAltName (e.g. "DNS:a.test"). */
export function opensslSelfSigned(subjectAltName: string, days = 30): Promise<KeyPairFiles> {
  return inTempDir(async (dir) => {
    await openssl(
      ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"].concat(
        ["-keyout", "key.pem", "-out", "cert.pem", "-days", String(days), "-subj", "/CN=openssl test"],
        ["-addext", `subjectAltName=${subjectAltName}`],
      ),
      dir,
    );
    return {
      certificatePem: await readFile(join(dir, "cert.pem"), "utf8"),
      privateKeyPem: await readFile(join(dir, "key.pem"), "utf8"),
    };
  });
}

/** An EC key encrypted with a passphrase (PKCS#8 "ENCRYPTED PRIVATE KEY"). */
export async function opensslEncryptedKey(): Promise<string> {
  const args = ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-aes-256-cbc"];
  return openssl([...args, "-pass", "pass:correct horse"]);
}

/** `openssl x509 -noout -text` (plus dates and fingerprint) of a PEM certificate. */
export function opensslDescribe(certificatePem: string): Promise<string> {
  return inTempDir(async (dir) => {
    await writeFile(join(dir, "cert.pem"), certificatePem);
    const flags = ["-noout", "-text", "-startdate", "-enddate", "-serial", "-fingerprint", "-sha256"];
    return openssl(["x509", "-in", "cert.pem", ...flags], dir);
  });
}

export function splitPemCertificates(chainPem: string): string[] {
  return chainPem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\n?/g) ?? [];
}

/** `openssl verify` of a leaf-first chain against a root; resolves with openssl's output ("…: OK"). */
export function opensslVerifyChain(chainPem: string, rootPem: string): Promise<string> {
  return inTempDir(async (dir) => {
    const [leaf, ...intermediates] = splitPemCertificates(chainPem);
    await writeFile(join(dir, "root.pem"), rootPem);
    await writeFile(join(dir, "leaf.pem"), leaf ?? "");
    await writeFile(join(dir, "intermediates.pem"), intermediates.join(""));
    const untrusted = intermediates.length > 0 ? ["-untrusted", "intermediates.pem"] : [];
    return openssl(["verify", "-purpose", "sslserver", "-CAfile", "root.pem", ...untrusted, "leaf.pem"], dir);
  });
}
