// A link as the text around its secret (a user's credential as the link carries it). Every user of
// one inbound shares head and tail; the secret part is escaped and checked per user. Builders make
// the shape once per inbound, so a subscription of many links costs a concatenation per link.
export type LinkShape = {
  readonly head: string;
  readonly tail: string;
  /** The secret as the link writes it; throws InvalidLinkTargetError for a secret no client can read back. */
  readonly secret: (secret: string) => string;
};

export function fillShape(shape: LinkShape, secret: string): string {
  return shape.head + shape.secret(secret) + shape.tail;
}
