// One gRPC channel to one core API: plaintext or TLS (CA, mTLS client certificate, server-name
// override), bearer token metadata, a deadline on every call, and fast reconnects after a restart.

import {
  type ChannelOptions,
  Client,
  credentials,
  type Interceptor,
  Metadata,
  type ServiceError,
} from "@grpc/grpc-js";
import { type ApiCredentials, credentialSecrets, usesTls } from "./api-credentials.ts";
import type { CoreTransport } from "./core-transport.ts";
import type { PreparedCall } from "./flavor-api.ts";
import { mapGrpcError } from "./grpc-errors.ts";

export type ChannelSettings = {
  /** "host:port" or "unix:///path/to/api.sock". */
  address: string;
  credentials?: ApiCredentials;
  /** Deadline of every call. Default 5000. */
  timeoutMs?: number;
  /** Reconnect backoff after a failed connect; V2Ray restarts in ~30 ms. Defaults 100 / 2000. */
  reconnectBackoffMs?: { initial: number; max: number };
  /** grpc-js interceptors, e.g. for tests that count what is sent. */
  interceptors?: Interceptor[];
};

export const DEFAULT_TIMEOUT_MS = 5000;

/** The `direct` transport: the core's own gRPC API. */
export class CoreChannel implements CoreTransport {
  readonly kind = "direct" as const;
  readonly address: string;
  readonly timeoutMs: number;
  private readonly client: Client;
  private readonly metadata: Metadata;
  private readonly secrets: string[];
  private readonly interceptors: Interceptor[];

  constructor(settings: ChannelSettings) {
    this.address = settings.address;
    this.timeoutMs = settings.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.secrets = credentialSecrets(settings.credentials);
    this.interceptors = settings.interceptors ?? [];
    this.metadata = new Metadata();
    const token = settings.credentials?.token;
    if (token !== undefined) this.metadata.set("authorization", `Bearer ${token}`);
    this.client = new Client(settings.address, channelCredentials(settings), channelOptions(settings));
  }

  /** Sends one prepared call; every failure comes back as an AppError (core_unavailable, …). */
  call<T>(prepared: PreparedCall<T>, extraSecrets: readonly string[] = []): Promise<T> {
    const context = {
      address: this.address,
      method: prepared.method,
      secrets: [...this.secrets, ...extraSecrets],
    };
    return new Promise<T>((resolve, reject) => {
      const onDone = (error: ServiceError | null, response?: Uint8Array) => {
        if (error !== null || response === undefined) {
          reject(mapGrpcError(error, context));
          return;
        }
        try {
          resolve(prepared.decode(response));
        } catch (decodeError) {
          reject(mapGrpcError(decodeError, context));
        }
      };
      try {
        this.startCall(prepared, onDone);
      } catch (error) {
        // e.g. "Channel has been shut down" after close()
        reject(mapGrpcError(error, context));
      }
    });
  }

  private startCall(
    prepared: PreparedCall<unknown>,
    onDone: (error: ServiceError | null, response?: Uint8Array) => void,
  ): void {
    this.client.makeUnaryRequest(
      prepared.path,
      (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
      (bytes: Buffer) => new Uint8Array(bytes),
      prepared.request,
      this.metadata.clone(),
      {
        deadline: Date.now() + this.timeoutMs + (prepared.extraTimeoutMs ?? 0),
        interceptors: this.interceptors,
      },
      onDone,
    );
  }

  close(): void {
    this.client.close();
  }
}

function channelCredentials(settings: ChannelSettings) {
  const creds = settings.credentials;
  if (!usesTls(creds, settings.address)) return credentials.createInsecure();
  const pem = (text: string | undefined) => (text === undefined ? null : Buffer.from(text));
  // Without a CA, Node's root store (plus NODE_EXTRA_CA_CERTS) verifies the server.
  return credentials.createSsl(pem(creds?.ca), pem(creds?.key), pem(creds?.cert));
}

function channelOptions(settings: ChannelSettings): ChannelOptions {
  const backoff = settings.reconnectBackoffMs ?? { initial: 100, max: 2000 };
  const options: ChannelOptions = {
    "grpc.initial_reconnect_backoff_ms": backoff.initial,
    "grpc.max_reconnect_backoff_ms": backoff.max,
    "grpc.max_receive_message_length": 64 * 1024 * 1024,
    // Each client owns its channel: closing one server's client must not touch another's.
    "grpc.use_local_subchannel_pool": 1,
  };
  const serverName = settings.credentials?.server_name;
  if (serverName !== undefined) {
    options["grpc.ssl_target_name_override"] = serverName;
    options["grpc.default_authority"] = serverName;
  }
  return options;
}
