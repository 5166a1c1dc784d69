// The names of the subscription formats, shared by the settings feature (UA rules name them) and the
// subscriptions feature (which serves them).
export const FORMATS = ["base64", "links", "mihomo", "sing-box", "xray-json"] as const;
export type Format = (typeof FORMATS)[number];

export function isFormat(text: string): text is Format {
  return (FORMATS as readonly string[]).includes(text);
}
