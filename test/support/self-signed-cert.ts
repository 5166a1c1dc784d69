// A throwaway self-signed certificate for `localhost` / 127.0.0.1, made with the openssl CLI, for
// tests whose real clients (v2ray, trojan) verify a TLS server against it as their CA.
import { spawnSync } from "node:child_process";
import { join } from "node:path";

export function selfSignedCert(dir: string): { certFile: string; keyFile: string } {
  const certFile = join(dir, "cert.pem");
  const keyFile = join(dir, "key.pem");
  const args = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  args.push("-keyout", keyFile, "-out", certFile, "-days", "1", "-subj", "/CN=localhost");
  args.push("-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1");
  const result = spawnSync("openssl", args, { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`openssl could not make a certificate: ${result.stderr}`);
  return { certFile, keyFile };
}
