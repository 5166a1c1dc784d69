// What a name may hold. Names (users, servers, templates, certificates, webhooks, placeholders, page
// texts) end up in YAML, JSON, share links, HTTP headers and HTML, and the strictest reader of each
// decides: go-yaml (mihomo) ends a line, and so a comment, at U+0085, U+2028 and U+2029 as well as at
// CR and LF; C0/C1 controls are not printable in YAML; bidirectional overrides and isolates make a
// name display as something else (a server that reads "eu-1" but sorts and links as another). So
// the API refuses these in names (the `line` and `text` formats of lib/validation.ts), and every
// writer escapes them anyway for rows stored before this rule (links/formats/yaml.ts, headerSafe()).

/** C0 and C1 controls (U+0085 among them), DEL, U+2028/U+2029, bidi embeddings/overrides and isolates. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
export const UNSAFE_IN_LINE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

/** The same, but a multi-line text may hold LF and TAB (CR, U+0085, U+2028 and U+2029 stay refused). */
export const UNSAFE_IN_TEXT =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

/** Why a name is refused, as the API says it. */
export const LINE_RULE =
  "must not contain control characters, line breaks (U+0085, U+2028 and U+2029 included) or bidirectional overrides/isolates (U+202A-U+202E, U+2066-U+2069)";
export const TEXT_RULE =
  "must not contain control characters other than line feed and tab, CR, U+0085, U+2028, U+2029 or bidirectional overrides/isolates (U+202A-U+202E, U+2066-U+2069)";

export function isSafeLine(text: string): boolean {
  return !UNSAFE_IN_LINE.test(text);
}

export function isSafeText(text: string): boolean {
  return !UNSAFE_IN_TEXT.test(text);
}

const LONE_SURROGATE = /[\uD800-\uDFFF]/gu;
const NOT_HEADER_SAFE = /[^\u0020-\u007e]/gu;

/**
 * A value an admin typed, made safe for an HTTP header field whatever it holds: every character
 * outside printable ASCII percent-encoded (UTF-8), so no CR, LF or control ever reaches the head and
 * a URL stays a URL.
 */
export function headerSafe(value: string): string {
  return value.replace(LONE_SURROGATE, "\uFFFD").replace(NOT_HEADER_SAFE, (c) => encodeURIComponent(c));
}
