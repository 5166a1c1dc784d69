// Telling a UUID from other identifiers where one path parameter may be either (a grant by the
// user's uuid or by its proxy user id; a subscription id).

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(text: string): boolean {
  return UUID.test(text);
}
