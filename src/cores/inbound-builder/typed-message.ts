// Packs a message into each flavor's TypedMessage: the bare full proto name plus its bytes.

import { create, type DescMessage, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import {
  type TypedMessage as V2TypedMessage,
  TypedMessageSchema as V2TypedMessageSchema,
} from "../../gen/v2ray/common/serial_pb.ts";
import {
  type TypedMessage as XrayTypedMessage,
  TypedMessageSchema as XrayTypedMessageSchema,
} from "../../gen/xray/common/serial_pb.ts";

export function typedV2ray<Desc extends DescMessage>(
  schema: Desc,
  init: MessageInitShape<Desc>,
): V2TypedMessage {
  return create(V2TypedMessageSchema, {
    type: schema.typeName,
    value: toBinary(schema, create(schema, init)),
  });
}

export function typedXray<Desc extends DescMessage>(
  schema: Desc,
  init: MessageInitShape<Desc>,
): XrayTypedMessage {
  return create(XrayTypedMessageSchema, {
    type: schema.typeName,
    value: toBinary(schema, create(schema, init)),
  });
}
