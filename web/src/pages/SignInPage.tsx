// Sign-in: POST /api/auth/token; the token goes to sessionStorage (auth/session.ts). An admin with
// two-factor gets 401 totp_required: the form then asks for the 6-digit code (or a recovery code)
// and sends the same username and password again with it.

import { Alert, Anchor, Button, Center, Paper, PasswordInput, Stack, TextInput, Title } from "@mantine/core";
import { useForm } from "@mantine/form";
import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { accountApi } from "../api/admin.ts";
import { ApiError } from "../api/client.ts";
import { session } from "../auth/session.ts";
import { useT } from "../i18n/i18n.tsx";
import { ErrorAlert } from "../ui/errors.tsx";

type Values = { username: string; password: string; code: string; recovery: string };

export function SignInPage() {
  const t = useT();
  const form = useForm<Values>({ initialValues: { username: "", password: "", code: "", recovery: "" } });
  // After a totp_required: which second factor the form asks for.
  const [factor, setFactor] = useState<"none" | "code" | "recovery">("none");
  const signIn = useMutation({
    mutationFn: (v: Values) =>
      accountApi.signIn({
        username: v.username,
        password: v.password,
        ...(factor === "code" ? { totp_code: v.code } : {}),
        ...(factor === "recovery" ? { recovery_code: v.recovery.trim() } : {}),
      }),
    onSuccess: (token) => session.signIn(token.access_token),
    onError: (error) => {
      if (error instanceof ApiError && error.code === "totp_required") setFactor("code");
      if (error instanceof ApiError && error.code === "invalid_totp")
        form.setValues({ code: "", recovery: "" });
    },
  });
  // totp_required is the next step, not a failure: ask for the code instead of showing an error.
  const isAsking = signIn.error instanceof ApiError && signIn.error.code === "totp_required";
  return (
    <Center mih="100dvh" p="md">
      <Paper component="main" withBorder shadow="sm" p="xl" w="100%" maw={380}>
        <form
          onSubmit={form.onSubmit((values) => {
            if (!signIn.isPending) signIn.mutate(values);
          })}
        >
          <Stack>
            <Title order={1} size="h2">
              {t("signIn.title")}
            </Title>
            {session.wasExpired() && !signIn.isError && (
              <Alert color="yellow" role="status">
                {t("signIn.expired")}
              </Alert>
            )}
            <TextInput
              label={t("signIn.username")}
              autoComplete="username"
              required
              data-autofocus
              autoFocus={factor === "none"}
              readOnly={factor !== "none"}
              {...form.getInputProps("username")}
            />
            <PasswordInput
              label={t("signIn.password")}
              autoComplete="current-password"
              required
              readOnly={factor !== "none"}
              {...form.getInputProps("password")}
            />
            {factor === "code" && (
              <TextInput
                label={t("signIn.totpCode")}
                description={t("signIn.totpHint")}
                required
                autoFocus
                autoComplete="one-time-code"
                inputMode="numeric"
                maxLength={6}
                placeholder="123456"
                data-testid="totp-code"
                value={form.values.code}
                onChange={(event) => {
                  const code = event.currentTarget.value.replace(/\D/g, "").slice(0, 6);
                  form.setFieldValue("code", code);
                  // Six digits are the whole answer: sign in without a further click.
                  if (code.length === 6 && !signIn.isPending) signIn.mutate({ ...form.values, code });
                }}
              />
            )}
            {factor === "recovery" && (
              <TextInput
                label={t("signIn.recoveryCode")}
                autoComplete="off"
                required
                autoFocus
                placeholder="xxxxx-xxxxx"
                {...form.getInputProps("recovery")}
              />
            )}
            {factor !== "none" && (
              <Anchor
                component="button"
                type="button"
                size="sm"
                ta="start"
                onClick={() => setFactor(factor === "code" ? "recovery" : "code")}
              >
                {factor === "code" ? t("signIn.useRecovery") : t("signIn.useCode")}
              </Anchor>
            )}
            {isAsking && factor === "code" && (
              <Alert color="blue" role="status">
                {t("signIn.totpRequired")}
              </Alert>
            )}
            {signIn.isError && !isAsking && <ErrorAlert error={signIn.error} />}
            <Button type="submit" loading={signIn.isPending}>
              {t("signIn.submit")}
            </Button>
          </Stack>
        </form>
      </Paper>
    </Center>
  );
}
