// GET /api/users/{id}/devices (users.read), DELETE /api/users/{id}/devices/{device_id} (users.write).
import { Type } from "typebox";
import type { App } from "../../lib/http.ts";
import { IdParams, problems } from "../../lib/schemas.ts";
import { DeviceParams, UserDevices } from "./devices.schemas.ts";
import type { DevicesService } from "./devices.service.ts";

export function devicesRoutes(app: App, devices: DevicesService): void {
  const tags = ["fair use"];
  app.get(
    "/api/users/:id/devices",
    {
      schema: {
        tags,
        summary: "The user's devices (HWIDs their apps fetched /sub from) and device limit",
        params: IdParams,
        response: { 200: UserDevices, ...problems(404) },
      },
    },
    (request) => devices.list(request.params.id),
  );
  app.delete(
    "/api/users/:id/devices/:device_id",
    {
      schema: {
        tags,
        summary: "Remove one of the user's devices: its place is free for the next new device",
        params: DeviceParams,
        response: { 204: Type.Null(), ...problems(404) },
      },
    },
    async (request, reply) => {
      await devices.remove(request.params.id, request.params.device_id);
      return reply.code(204).send(null);
    },
  );
}
