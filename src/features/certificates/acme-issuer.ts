// ACME as the certificates service sees it: issue(domain) with the configured CA, the account kept in
// the database (key sealed, created once), the challenge picked per name, and the http-01 listener
// started only while an issuance needs it (port 80 is not held, or required, the rest of the time).
import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { CertificatesConfig } from "../../config/config.ts";
import type { SecretBox } from "../../lib/secret-box.ts";
// acme.ts (and acme-client, with axios under it) loads on the first issuance, not with the app: most
// processes never issue, and the import costs more than starting the rest of the app.
import type { AcmeChallenge } from "./acme.ts";
import type { AcmeAccountRow, AcmeAccountsRepository } from "./acme-accounts.repository.ts";
import { AcmeIssueError } from "./acme-errors.ts";
import { classifyDomain } from "./domain-name.ts";
import { Http01Responder, type Http01Server, startHttp01Server } from "./http01-server.ts";

/** The configured ACME settings (config.ts), plus a poll interval tests may shorten. */
export type AcmeSettings = CertificatesConfig["acme"] & { pollIntervalMs?: number };

export type IssuedMaterial = { certificatePem: string; privateKeyPem: string };

/** What the certificates service needs from ACME (a fake in tests that do not run a CA). */
export interface CertificateAuthority {
  issue(domain: string, signal: AbortSignal): Promise<IssuedMaterial>;
  close(): Promise<void>;
}

export class AcmeIssuer implements CertificateAuthority {
  readonly #listener: SharedHttp01Listener;
  #trustedCaPem: Promise<string | undefined> | undefined;

  constructor(
    private readonly settings: AcmeSettings,
    private readonly accounts: AcmeAccountsRepository,
    private readonly secretBox: SecretBox,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.#listener = new SharedHttp01Listener(settings.http01Host, settings.http01Port);
  }

  async issue(domain: string, signal: AbortSignal): Promise<IssuedMaterial> {
    const account = await this.#account();
    const trustedCaPem = await this.#readTrustedCa();
    const useDns = classifyDomain(domain) === "wildcard" || this.settings.challenge === "dns-01";
    const challenge = useDns
      ? this.#dnsChallenge()
      : { type: "http-01" as const, responder: await this.#listener.acquire() };
    try {
      const { issueCertificate } = await import("./acme.ts");
      const issued = await issueCertificate({
        directoryUrl: this.settings.directoryUrl,
        accountKeyPem: this.secretBox.open(account.account_key_sealed),
        accountUrl: account.account_url ?? undefined,
        externalAccountBinding: this.settings.eab,
        contactEmail: this.settings.contactEmail,
        domain,
        challenge,
        trustedCaPem,
        pollIntervalMs: this.settings.pollIntervalMs,
        signal,
      });
      if (issued.accountUrl !== account.account_url) {
        await this.accounts.setAccountUrl(account.id, issued.accountUrl, this.now().toISOString());
      }
      return { certificatePem: issued.certificatePem, privateKeyPem: issued.privateKeyPem };
    } finally {
      if (challenge.type === "http-01") await this.#listener.release();
    }
  }

  close(): Promise<void> {
    return this.#listener.closeNow();
  }

  #dnsChallenge(): AcmeChallenge {
    if (this.settings.dns01Hook === undefined) {
      const detail = "dns-01 (needed for wildcards) requires a hook: set PORTCULLIS_ACME_DNS01_HOOK";
      throw new AcmeIssueError("checking the request", detail);
    }
    return { type: "dns-01", hook: { command: this.settings.dns01Hook } };
  }

  /** The account for the configured directory; its key is made and stored (sealed) on first use. */
  async #account(): Promise<AcmeAccountRow> {
    const existing = await this.accounts.findAccount(this.settings.directoryUrl);
    if (existing !== undefined) return existing;
    const { createAccountKeyPem } = await import("./acme.ts");
    const fresh: AcmeAccountRow = {
      id: randomUUID(),
      directory_url: this.settings.directoryUrl,
      account_key_sealed: this.secretBox.seal(await createAccountKeyPem()),
      account_url: null,
    };
    return this.accounts.insertAccountOnce(fresh, this.now().toISOString());
  }

  #readTrustedCa(): Promise<string | undefined> {
    const file = this.settings.caFile;
    this.#trustedCaPem ??= file === undefined ? Promise.resolve(undefined) : readFile(file, "utf8");
    return this.#trustedCaPem.catch((error: unknown) => {
      this.#trustedCaPem = undefined;
      const code = error instanceof Error && "code" in error ? String(error.code) : "unreadable";
      throw new AcmeIssueError(
        "checking the request",
        `cannot read PORTCULLIS_ACME_CA_FILE ${file} (${code})`,
      );
    });
  }
}

/** One http-01 listener shared by concurrent issuances: started by the first, closed by the last. */
class SharedHttp01Listener {
  readonly responder = new Http01Responder();
  #server: Promise<Http01Server> | undefined;
  #closing: Promise<void> = Promise.resolve();
  #users = 0;

  constructor(
    private readonly host: string,
    private readonly port: number,
  ) {}

  async acquire(): Promise<Http01Responder> {
    this.#users += 1;
    await this.#closing;
    this.#server ??= startHttp01Server({ host: this.host, port: this.port, responder: this.responder });
    try {
      await this.#server;
      return this.responder;
    } catch (error) {
      this.#users -= 1;
      this.#server = undefined;
      const code = error instanceof Error && "code" in error ? String(error.code) : describe(error);
      const detail = `cannot listen on ${this.host}:${this.port} for http-01 challenges (${code})`;
      throw new AcmeIssueError("validating the domain", detail);
    }
  }

  async release(): Promise<void> {
    this.#users -= 1;
    if (this.#users === 0) await this.closeNow();
  }

  async closeNow(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (server === undefined) return;
    this.#closing = server.then((started) => started.close()).catch(() => undefined);
    await this.#closing;
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : "unknown error";
}
