// The signed-in admin's own password: the current one, the new one and, with two-factor on, a code
// (POST /api/auth/password, the only way to change one's own password; other sessions end).
import { Button, Card, Group, PasswordInput, Stack, Text, TextInput, Title } from "@mantine/core";
import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { api, unwrap } from "../../api/client.ts";
import { useMe } from "../../auth/me.ts";
import { useT } from "../../i18n/i18n.tsx";
import { ErrorAlert, notifyDone } from "../../ui/errors.tsx";

export function ChangePassword() {
  const t = useT();
  const { me } = useMe();
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const [code, setCode] = useState("");
  const needsCode = me?.totp_enabled === true;
  const change = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST("/api/auth/password", {
          body: {
            current_password: current,
            new_password: next,
            ...(needsCode ? { totp_code: code } : {}),
          },
        }),
      ),
    onSuccess: () => {
      setCurrent("");
      setNext("");
      setCode("");
      notifyDone(t("password.changed"));
    },
    onError: () => setCode(""),
  });
  if (me?.token_kind === "api_key") return null;
  return (
    <Card withBorder>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          change.mutate();
        }}
      >
        <Stack>
          <Title order={3}>{t("password.title")}</Title>
          <Text size="sm" c="dimmed">
            {t("password.hint")}
          </Text>
          <Group align="flex-end" wrap="wrap">
            <PasswordInput
              label={t("password.current")}
              required
              autoComplete="current-password"
              value={current}
              onChange={(e) => setCurrent(e.currentTarget.value)}
              w={220}
            />
            <PasswordInput
              label={t("password.new")}
              required
              minLength={8}
              autoComplete="new-password"
              value={next}
              onChange={(e) => setNext(e.currentTarget.value)}
              w={220}
            />
            {needsCode && (
              <TextInput
                label={t("totp.code")}
                required
                autoComplete="one-time-code"
                inputMode="numeric"
                maxLength={6}
                value={code}
                onChange={(e) => setCode(e.currentTarget.value.replace(/\D/g, "").slice(0, 6))}
                w={160}
              />
            )}
            <Button type="submit" loading={change.isPending} disabled={next.length < 8}>
              {t("password.change")}
            </Button>
          </Group>
          {change.isError && <ErrorAlert error={change.error} />}
        </Stack>
      </form>
    </Card>
  );
}
