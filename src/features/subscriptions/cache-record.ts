// The bytes of one cached subscription inside a page of the subscription cache: a fixed header, the
// user id (so a page can be swept without asking the index), the slot of the layout it was stored
// against, then five latin1 fields. Records live outside the JavaScript heap, so 100,000 of them
// neither grow the heap nor its garbage collector's working set.

export type RecordFields = {
  /** A lowercase uuid: 36 ASCII characters. */
  userId: string;
  /** The cache's slot number of the layout (the user's inbounds) the body is stored against. */
  layoutSlot: number;
  /** Whole seconds. */
  renderedAtS: number;
  /** body-delta.ts */
  body: string;
  etag: string;
  userinfo: string;
  title: string;
  disposition: string;
};

/** The header fields as strings, and where the encoded body is. */
export type RecordView = {
  renderedAtS: number;
  etag: string;
  userinfo: string;
  title: string;
  disposition: string;
  bodyStart: number;
  bodyEnd: number;
};

// length u16 | flags u8 | unused u8 | renderedAtS u32 | user id 36 | layout slot u32 | fields
const LENGTH = 0;
const FLAGS = 2;
const RENDERED_AT = 4;
const USER_ID = 8;
const USER_ID_LENGTH = 36;
const LAYOUT = USER_ID + USER_ID_LENGTH;
const FIELDS = LAYOUT + 4;
const VISITED = 1;
export const MAX_RECORD_BYTES = 0xffff;
const NOT_LATIN1 = /[\u0100-\uffff]/;

function textsOf(fields: RecordFields): string[] {
  return [fields.body, fields.etag, fields.userinfo, fields.title, fields.disposition];
}

/** Bytes the record takes, or undefined when it cannot be stored (too large, or not latin1 text). */
export function recordLength(fields: RecordFields): number | undefined {
  if (fields.userId.length !== USER_ID_LENGTH) return undefined;
  let length = FIELDS;
  for (const text of textsOf(fields)) {
    if (NOT_LATIN1.test(text)) return undefined;
    length += 2 + text.length;
  }
  return length <= MAX_RECORD_BYTES ? length : undefined;
}

export function writeRecord(page: Buffer, at: number, fields: RecordFields, length: number): void {
  page.writeUInt16LE(length, at + LENGTH);
  page.writeUInt16LE(0, at + FLAGS);
  page.writeUInt32LE(fields.renderedAtS, at + RENDERED_AT);
  page.write(fields.userId, at + USER_ID, USER_ID_LENGTH, "latin1");
  page.writeUInt32LE(fields.layoutSlot, at + LAYOUT);
  let offset = at + FIELDS;
  for (const text of textsOf(fields)) {
    page.writeUInt16LE(text.length, offset);
    page.write(text, offset + 2, text.length, "latin1");
    offset += 2 + text.length;
  }
}

export function lengthAt(page: Buffer, at: number): number {
  return page.readUInt16LE(at + LENGTH);
}

export function userIdAt(page: Buffer, at: number): string {
  return page.toString("latin1", at + USER_ID, at + USER_ID + USER_ID_LENGTH);
}

export function renderedAtSOf(page: Buffer, at: number): number {
  return page.readUInt32LE(at + RENDERED_AT);
}

export function layoutSlotAt(page: Buffer, at: number): number {
  return page.readUInt32LE(at + LAYOUT);
}

export function isVisited(page: Buffer, at: number): boolean {
  return (page.readUInt8(at + FLAGS) & VISITED) !== 0;
}

export function setVisited(page: Buffer, at: number, visited: boolean): void {
  page.writeUInt8(visited ? VISITED : 0, at + FLAGS);
}

/** The four header fields with one read of the page (substrings of it), and the body's place. */
export function viewAt(page: Buffer, at: number): RecordView {
  const bodyStart = at + FIELDS + 2;
  const bodyEnd = bodyStart + page.readUInt16LE(at + FIELDS);
  const text = page.toString("latin1", bodyEnd, at + lengthAt(page, at));
  const fields: string[] = [];
  for (let offset = 0; fields.length < 4; ) {
    const length = text.charCodeAt(offset) | (text.charCodeAt(offset + 1) << 8);
    fields.push(text.slice(offset + 2, offset + 2 + length));
    offset += 2 + length;
  }
  return {
    renderedAtS: page.readUInt32LE(at + RENDERED_AT),
    etag: fields[0] ?? "",
    userinfo: fields[1] ?? "",
    title: fields[2] ?? "",
    disposition: fields[3] ?? "",
    bodyStart,
    bodyEnd,
  };
}
