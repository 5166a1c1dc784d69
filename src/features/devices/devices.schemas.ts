// A user's devices as the API shows them (docs/FAIR-USE.md "Devices", docs/API.md "Fair use").
import { Type } from "typebox";
import { Timestamp, Uuid } from "../../lib/schemas.ts";

export const DeviceParams = Type.Object({ id: Uuid, device_id: Uuid }, { additionalProperties: false });

const Text = (description: string) => Type.Union([Type.String(), Type.Null()], { description });

export const Device = Type.Object({
  id: Uuid,
  hwid: Type.String({ description: "the app's hardware id (x-hwid): 1-128 printable ASCII characters" }),
  app: Text("the User-Agent of the fetch that last saw it (cut to 128 characters)"),
  os: Text("x-device-os, e.g. Android, iOS, Windows"),
  os_version: Text("x-ver-os"),
  model: Text("x-device-model"),
  first_seen_at: Timestamp,
  last_seen_at: Timestamp,
});

export const UserDevices = Type.Object({
  user_id: Uuid,
  device_limit: Type.Union([Type.Integer(), Type.Null()], {
    description: "the user's own (null: the subscription settings' default_device_limit)",
  }),
  effective_device_limit: Type.Integer({ description: "the limit applied; 0: unlimited (not checked)" }),
  devices: Type.Array(Device, { description: "most recently seen first" }),
});
