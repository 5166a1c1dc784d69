// Token login/logout, who am I, API keys, and the TOTP second factor. The bearer check and the
// role check are hooks in app.ts.
import { Type } from "typebox";
import { type App, principalOf } from "../../lib/http.ts";
import { IdParams, problems } from "../../lib/schemas.ts";
import {
  ApiKey,
  ApiKeyCreate,
  CreatedApiKey,
  Me,
  PasswordChange,
  RecoveryCodes,
  SecondFactor,
  TokenRequest,
  TokenResponse,
  TotpConfirm,
  TotpEnrolment,
} from "./auth.schemas.ts";
import type { AuthService } from "./auth.service.ts";
import type { OwnCredentials } from "./own-credentials.ts";

export function authRoutes(app: App, auth: AuthService, own: OwnCredentials): void {
  app.post(
    "/api/auth/token",
    {
      config: { auth: false },
      schema: {
        tags: ["auth"],
        summary: "Exchange an admin username and password (and second factor) for a bearer token",
        description:
          "An admin with two-factor authentication also sends totp_code or recovery_code " +
          "(401 totp_required without one, 401 invalid_totp for a wrong one).",
        body: TokenRequest,
        response: { 200: TokenResponse, ...problems(429) },
      },
    },
    async (request) => auth.login(request.body, request.ip, request.id),
  );

  app.get(
    "/api/auth/me",
    {
      schema: {
        tags: ["auth"],
        summary: "The admin and role this token acts as, and its permissions",
        response: { 200: Me, ...problems() },
      },
    },
    async (request) => auth.me(principalOf(request)),
  );

  app.post(
    "/api/auth/totp/enroll",
    {
      schema: {
        tags: ["auth"],
        summary: "Start two-factor enrolment: a secret, its otpauth:// URI and a QR code",
        description: "Pending until confirmed with a first code. Needs a session, not an API key.",
        response: { 200: TotpEnrolment, ...problems(403, 409) },
      },
    },
    async (request) => auth.enrollTotp(principalOf(request)),
  );

  app.post(
    "/api/auth/totp/confirm",
    {
      schema: {
        tags: ["auth"],
        summary: "Turn two-factor on with a first code; answers ten one-time recovery codes",
        body: TotpConfirm,
        response: { 200: RecoveryCodes, ...problems(403, 409) },
      },
    },
    async (request) => auth.confirmTotp(principalOf(request), request.body.code),
  );

  app.post(
    "/api/auth/totp/disable",
    {
      schema: {
        tags: ["auth"],
        summary: "Turn two-factor off with a current code or a recovery code",
        description:
          "Needs a session, not an API key. A wrong code is 400 totp_code_rejected and counts " +
          "against the sign-in throttle: past its budget, 429 rate_limited with Retry-After.",
        body: SecondFactor,
        response: { 204: Type.Null(), ...problems(403, 429) },
      },
    },
    async (request, reply) => {
      await own.disableTotp(principalOf(request), request.body, request.ip);
      return reply.code(204).send(null);
    },
  );

  app.post(
    "/api/auth/password",
    {
      schema: {
        tags: ["auth"],
        summary: "Change your own password: the current one, and with two-factor on a code",
        description:
          "Needs a session, not an API key. 400 current_password_rejected or totp_code_rejected; " +
          "each counts against the sign-in throttle (429 rate_limited with Retry-After past it). " +
          "Your other sessions end; this one and your API keys stay. This is the only way to " +
          "change your own password (PUT /api/admins/{your id} answers 409 cannot_reset_self).",
        body: PasswordChange,
        response: { 204: Type.Null(), ...problems(403, 429) },
      },
    },
    async (request, reply) => {
      await own.changePassword(principalOf(request), request.body, request.ip);
      return reply.code(204).send(null);
    },
  );

  app.post(
    "/api/auth/logout",
    {
      schema: {
        tags: ["auth"],
        summary: "Revoke the token used for this request",
        response: { 204: Type.Null(), ...problems() },
      },
    },
    async (request, reply) => {
      await auth.logout(principalOf(request));
      return reply.code(204).send(null);
    },
  );

  app.get(
    "/api/api-keys",
    {
      schema: {
        tags: ["auth"],
        summary: "List API keys (secrets are never shown again)",
        response: { 200: Type.Array(ApiKey), ...problems() },
      },
    },
    async (request) => auth.listApiKeys(principalOf(request).adminId),
  );

  app.post(
    "/api/api-keys",
    {
      schema: {
        tags: ["auth"],
        summary: "Create a named long-lived API key; the secret is in this response only",
        description: "role narrows the key to a role within the caller's (403 role_not_within otherwise).",
        body: ApiKeyCreate,
        response: { 201: CreatedApiKey, ...problems(403) },
      },
    },
    async (request, reply) => {
      const key = await auth.createApiKey(principalOf(request), request.body);
      return reply.code(201).send(key);
    },
  );

  app.delete(
    "/api/api-keys/:id",
    {
      schema: {
        tags: ["auth"],
        summary: "Revoke an API key",
        params: IdParams,
        response: { 204: Type.Null(), ...problems(404) },
      },
    },
    async (request, reply) => {
      await auth.deleteApiKey(principalOf(request).adminId, request.params.id);
      return reply.code(204).send(null);
    },
  );
}
