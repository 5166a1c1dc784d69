// `portcullis lobby encode|decode <Message>`: converts lobby messages between JSON and the proto2 wire
// format so people can inspect and craft them. Exit codes: 0 ok, 1 bad input, 2 usage error.
import { isLobbyMessageName, type LobbyMessageName, lobbyCodecByName, lobbyCodecs } from "../lobby/codec.ts";
import { LobbyFormatError } from "../lobby/error.ts";

export const ExitCode = { ok: 0, badInput: 1, usage: 2 } as const;
type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

const Encoding = { binary: "binary", hex: "hex", base64: "base64" } as const;
type Encoding = (typeof Encoding)[keyof typeof Encoding];

/** The process streams, replaceable in tests. */
export type LobbyCliIo = {
  readInput(): Promise<Uint8Array>;
  writeOut(data: string | Uint8Array): void;
  writeErr(text: string): void;
  isOutputTerminal: boolean;
};

export const usage = `usage: portcullis lobby encode <Message> [--hex | --base64]   JSON on stdin -> binary on stdout
       portcullis lobby decode <Message> [--hex | --base64]   binary on stdin -> JSON on stdout
--hex / --base64 choose the form of the binary side (default: raw bytes).
Messages: ${Object.keys(lobbyCodecs).join(", ")}
`;

type Command = { action: "encode" | "decode"; message: LobbyMessageName; encoding: Encoding };

export async function run(args: string[], io: LobbyCliIo = processIo()): Promise<number> {
  const parsed = parseArgs(args);
  if (parsed === "help") {
    io.writeOut(usage);
    return ExitCode.ok;
  }
  if (typeof parsed === "string") {
    io.writeErr(`error: ${parsed}\n${usage}`);
    return ExitCode.usage;
  }
  if (parsed.action === "encode" && parsed.encoding === Encoding.binary && io.isOutputTerminal) {
    io.writeErr("error: refusing to write binary to a terminal; pipe it or use --hex / --base64\n");
    return ExitCode.usage;
  }
  try {
    const input = await io.readInput();
    io.writeOut(parsed.action === "encode" ? encode(parsed, input) : decode(parsed, input, io));
    return ExitCode.ok;
  } catch (error) {
    return reportFailure(error, io);
  }
}

/** A Command, "help", or the reason the arguments are wrong. */
function parseArgs(args: string[]): Command | "help" | string {
  if (args.includes("--help") || args.includes("-h")) return "help";
  const flags = args.filter((arg) => arg.startsWith("-"));
  const [action, message, ...extra] = args.filter((arg) => !arg.startsWith("-"));
  if (action !== "encode" && action !== "decode")
    return action === undefined ? "missing command: encode or decode" : `unknown lobby command: ${action}`;
  if (message === undefined) return `${action} needs a message name`;
  if (!isLobbyMessageName(message)) return `unknown message: ${message}`;
  if (extra.length > 0) return `unexpected argument: ${extra[0]}`;
  const unknownFlag = flags.find((flag) => flag !== "--hex" && flag !== "--base64");
  if (unknownFlag !== undefined) return `unknown option: ${unknownFlag}`;
  if (flags.includes("--hex") && flags.includes("--base64")) return "choose one of --hex and --base64";
  const encoding = flags.includes("--hex")
    ? Encoding.hex
    : flags.includes("--base64")
      ? Encoding.base64
      : Encoding.binary;
  return { action, message, encoding };
}

function encode(command: Command, input: Uint8Array): string | Uint8Array {
  const codec = lobbyCodecByName(command.message);
  const bytes = codec.encode(codec.fromJson(parseJson(input)));
  if (command.encoding === Encoding.hex) return `${Buffer.from(bytes).toString("hex")}\n`;
  if (command.encoding === Encoding.base64) return `${Buffer.from(bytes).toString("base64")}\n`;
  return bytes;
}

function decode(command: Command, input: Uint8Array, io: LobbyCliIo): string {
  const codec = lobbyCodecByName(command.message);
  const message = codec.decode(binaryFrom(input, command.encoding));
  const unknown = codec.countUnknownFields(message);
  if (unknown > 0)
    io.writeErr(`note: ${unknown} unknown field(s) not shown: the JSON form has only the schema's fields\n`);
  return `${JSON.stringify(codec.toJson(message), null, 2)}\n`;
}

/** Input the user got wrong; reported as one line without a stack trace. */
class InputError extends Error {}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

function inputText(input: Uint8Array): string {
  try {
    return strictUtf8.decode(input);
  } catch {
    throw new InputError("stdin is not valid UTF-8 text");
  }
}

function parseJson(input: Uint8Array): unknown {
  const text = inputText(input);
  if (text.trim() === "") throw new InputError("stdin is empty; expected a JSON object");
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InputError(
      `stdin is not valid JSON: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

function binaryFrom(input: Uint8Array, encoding: Encoding): Uint8Array {
  if (encoding === Encoding.binary) return input;
  const text = inputText(input).replace(/\s+/g, "");
  if (encoding === Encoding.hex) {
    if (!/^([0-9a-fA-F]{2})*$/.test(text)) {
      throw new InputError("stdin is not hex: expected pairs of 0-9a-f digits (whitespace is ignored)");
    }
    return Uint8Array.from(Buffer.from(text, "hex"));
  }
  if (!/^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(text)) {
    throw new InputError("stdin is not base64: expected padded standard base64 (whitespace is ignored)");
  }
  return Uint8Array.from(Buffer.from(text, "base64"));
}

function reportFailure(error: unknown, io: LobbyCliIo): ExitCode {
  if (error instanceof LobbyFormatError || error instanceof InputError) {
    io.writeErr(`error: ${error.message}\n`);
  } else {
    // A bug rather than bad input, but the CLI still prints one line instead of a stack trace.
    io.writeErr(`error: unexpected failure: ${error instanceof Error ? error.message : String(error)}\n`);
  }
  return ExitCode.badInput;
}

function processIo(): LobbyCliIo {
  return {
    async readInput() {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(Buffer.from(chunk));
      return Uint8Array.from(Buffer.concat(chunks));
    },
    writeOut: (data) => process.stdout.write(data),
    writeErr: (text) => process.stderr.write(text),
    isOutputTerminal: process.stdout.isTTY === true,
  };
}
