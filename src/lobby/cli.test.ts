// `portcullis lobby encode|decode`: the acceptance command run as a real subprocess against protoc's
// bytes, then the CLI's errors and exit codes (0 ok, 1 bad input, 2 usage) through an in-memory io.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";
import { requires } from "../../test/support/requires.ts";
import { ExitCode, type LobbyCliIo, run } from "../cli/lobby.ts";
import { hex, protocEncode, repoRoot } from "./protoc-reference.ts";

const acceptanceJson = '{"lobbies":[{"lobby_id":"18446744073709551615","has_pass_key":false}]}';

function shell(command: string) {
  const result = spawnSync("sh", ["-c", command], { cwd: repoRoot, encoding: "utf8", timeout: 60_000 });
  assert.equal(result.error, undefined);
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

test(
  "the acceptance command prints protoc's hex, and decode gives the JSON back with has_pass_key: false",
  requires("protoc"),
  () => {
    const expected = hex(
      protocEncode(
        "JoinableCustomLobbiesResponse",
        "lobbies { lobby_id: 18446744073709551615 has_pass_key: false }",
      ),
    );
    const encoded = shell(
      `echo '${acceptanceJson}' | node bin/portcullis.mjs lobby encode JoinableCustomLobbiesResponse --hex`,
    );
    assert.deepEqual(encoded, { code: 0, stdout: `${expected}\n`, stderr: "" });

    const decoded = shell(
      `echo ${expected} | node bin/portcullis.mjs lobby decode JoinableCustomLobbiesResponse --hex`,
    );
    assert.equal(decoded.code, 0, decoded.stderr);
    assert.deepEqual(JSON.parse(decoded.stdout), JSON.parse(acceptanceJson));
    assert.match(decoded.stdout, /"has_pass_key": false/);
  },
);

test("a truncated message on stdin exits 1 with one line on stderr and no stack trace", () => {
  const result = shell(
    "printf '0a0b09ffff' | node bin/portcullis.mjs lobby decode JoinableCustomLobbiesResponse --hex",
  );
  assert.equal(result.code, 1);
  assert.equal(result.stdout, "");
  assert.equal(result.stderr, "error: lobbies[0]: input is truncated\n");
});

test("a usage error exits 2 from the real launcher", () => {
  const result = shell("node bin/portcullis.mjs lobby encode NoSuchMessage < /dev/null");
  assert.equal(result.code, 2);
  assert.match(result.stderr, /^error: unknown message: NoSuchMessage\nusage:/);
});

type Captured = { code: number; stdout: string; stdoutBytes: Uint8Array; stderr: string };

async function cli(args: string[], stdin: string | Uint8Array, isOutputTerminal = false): Promise<Captured> {
  const out: Uint8Array[] = [];
  let stderr = "";
  const io: LobbyCliIo = {
    readInput: async () => (typeof stdin === "string" ? new TextEncoder().encode(stdin) : stdin),
    writeOut: (data) => out.push(typeof data === "string" ? new TextEncoder().encode(data) : data),
    writeErr: (text) => {
      stderr += text;
    },
    isOutputTerminal,
  };
  const code = await run(args, io);
  const stdoutBytes = Uint8Array.from(Buffer.concat(out));
  return { code, stdout: Buffer.from(stdoutBytes).toString("utf8"), stdoutBytes, stderr };
}

test("encode without a flag writes raw bytes that decode reads back", async () => {
  const encoded = await cli(["encode", "ClientHello"], '{"version": 7, "engine": -1}');
  assert.equal(encoded.code, ExitCode.ok);
  assert.equal(hex(encoded.stdoutBytes), "080728ffffffffffffffffff01");
  const decoded = await cli(["decode", "ClientHello"], encoded.stdoutBytes);
  assert.deepEqual(JSON.parse(decoded.stdout), { version: 7, engine: -1 });
});

test("--base64 works both ways and whitespace in hex or base64 input is ignored", async () => {
  const encoded = await cli(
    ["encode", "JoinableCustomLobbiesRequest", "--base64"],
    '{"custom_game_id":"9007199254740993"}',
  );
  assert.equal(encoded.stdout, `${Buffer.from("108180808080808010", "hex").toString("base64")}\n`);
  const decoded = await cli(
    ["decode", "JoinableCustomLobbiesRequest", "--base64"],
    ` ${encoded.stdout.slice(0, 4)}\n${encoded.stdout.slice(4)}`,
  );
  assert.deepEqual(JSON.parse(decoded.stdout), { custom_game_id: "9007199254740993" });
  const spacedHex = await cli(["decode", "ClientHello", "--hex"], "08 07\n28 01\n");
  assert.deepEqual(JSON.parse(spacedHex.stdout), { version: 7, engine: 1 });
});

test("bad input exits 1 with a one-line reason naming the field or the problem", async () => {
  const cases: [string[], string, string][] = [
    [
      ["encode", "JoinableCustomLobbiesResponseEntry"],
      '{"lobby_id": "18446744073709551616"}',
      "error: lobby_id: 18446744073709551616 is out of range for fixed64 (0 to 18446744073709551615)\n",
    ],
    [
      ["encode", "JoinableCustomLobbiesResponseEntry"],
      '{"member_count": -1}',
      "error: member_count: -1 is out of range for uint32 (0 to 4294967295)\n",
    ],
    [["encode", "ClientHello"], '{"version": 1', "error: stdin is not valid JSON: "],
    [["encode", "ClientHello"], "", "error: stdin is empty; expected a JSON object\n"],
    [["encode", "ClientHello"], '{"Version": 1}', 'error: Version: unknown key "Version" for ClientHello'],
    [["decode", "ClientHello", "--hex"], "0g", "error: stdin is not hex"],
    [["decode", "ClientHello", "--hex"], "080", "error: stdin is not hex"],
    [["decode", "ClientHello", "--base64"], "CA=", "error: stdin is not base64"],
    [
      ["decode", "ClientHello", "--hex"],
      "0a0141",
      "error: version: wire type 2 (LengthDelimited) does not fit uint32",
    ],
  ];
  for (const [args, stdin, stderrStart] of cases) {
    const result = await cli(args, stdin);
    assert.equal(result.code, ExitCode.badInput, `${args.join(" ")} <<< ${stdin}`);
    assert.ok(result.stderr.startsWith(stderrStart), `${result.stderr} should start with ${stderrStart}`);
    assert.equal(result.stderr.split("\n").length, 2, "exactly one line");
    assert.equal(result.stdout, "");
  }
});

test("usage errors exit 2 and print the usage", async () => {
  for (const args of [
    [],
    ["frobnicate", "ClientHello"],
    ["encode"],
    ["encode", "Nope"],
    ["encode", "ClientHello", "--hex", "--base64"],
    ["decode", "ClientHello", "--json"],
    ["decode", "ClientHello", "extra"],
  ]) {
    const result = await cli(args, "{}");
    assert.equal(result.code, ExitCode.usage, args.join(" "));
    assert.match(result.stderr, /^error: .*\nusage: portcullis lobby encode/);
  }
});

test("raw binary is not written to a terminal; hex is", async () => {
  assert.equal((await cli(["encode", "ClientHello"], "{}", true)).code, ExitCode.usage);
  assert.equal((await cli(["encode", "ClientHello", "--hex"], '{"version":1}', true)).stdout, "0801\n");
});

test("--help prints the usage and exits 0", async () => {
  const result = await cli(["--help"], "");
  assert.equal(result.code, ExitCode.ok);
  assert.match(result.stdout, /Messages: ClientHello, JoinableCustomLobbiesRequest/);
});

test("decode notes unknown fields that the JSON cannot show", async () => {
  const result = await cli(["decode", "ClientHello", "--hex"], "08016005");
  assert.deepEqual(JSON.parse(result.stdout), { version: 1 });
  assert.equal(
    result.stderr,
    "note: 1 unknown field(s) not shown: the JSON form has only the schema's fields\n",
  );
});
