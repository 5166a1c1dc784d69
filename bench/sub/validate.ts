// What a valid subscription is, for the benchmark's sanity check before it measures anything: a 200
// text/plain body of standard base64 that decodes to one share link per seeded inbound, in order,
// each with its protocol's scheme. A benchmark of error pages or empty bodies would measure nothing.
const SCHEMES: Record<string, string> = {
  vless: "vless://",
  vmess: "vmess://",
  trojan: "trojan://",
  shadowsocks: "ss://",
};

export type Sample = {
  bodyBytes: number;
  /** Headers the endpoint set itself (not the ones Node adds), for the ceiling server to repeat. */
  headers: Record<string, string>;
};

const AUTOMATIC = new Set(["date", "connection", "keep-alive", "content-length", "transfer-encoding"]);

/** Fetches each path and checks its body; throws with the first problem. Returns the first sample. */
export async function checkSubscriptions(
  baseUrl: string,
  paths: readonly string[],
  protocols: readonly string[],
): Promise<Sample> {
  let sample: Sample | undefined;
  for (const path of paths) {
    const response = await fetch(`${baseUrl}${path}`);
    const body = await response.text();
    const problem = problemOf(response, body, protocols);
    if (problem !== undefined) throw new Error(`GET ${path}: ${problem}`);
    if (sample === undefined) {
      const headers: Record<string, string> = {};
      response.headers.forEach((value, name) => {
        if (!AUTOMATIC.has(name)) headers[name] = value;
      });
      sample = { bodyBytes: Buffer.byteLength(body), headers };
    }
  }
  if (sample === undefined) throw new Error("no subscription paths to check");
  return sample;
}

function problemOf(response: Response, body: string, protocols: readonly string[]): string | undefined {
  if (response.status !== 200) return `status ${response.status}: ${body.slice(0, 200)}`;
  const type = response.headers.get("content-type") ?? "";
  if (!type.startsWith("text/plain")) return `content-type ${type}`;
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(body) || body.length % 4 !== 0) return "body is not standard base64";
  const links = Buffer.from(body, "base64").toString("utf8").split("\n");
  if (links.length !== protocols.length) {
    return `${links.length} links, expected ${protocols.length}: ${JSON.stringify(links.join(" | ").slice(0, 200))}`;
  }
  for (const [index, protocol] of protocols.entries()) {
    const scheme = SCHEMES[protocol] ?? `${protocol}://`;
    if (!links[index]?.startsWith(scheme))
      return `link ${index + 1} is not ${scheme}: ${JSON.stringify(links[index])}`;
  }
  return undefined;
}
