// Sign-in: POST /api/auth/token; the token goes to sessionStorage (auth/session.ts).
import { Alert, Button, Center, Paper, PasswordInput, Stack, TextInput, Title } from "@mantine/core";
import { useForm } from "@mantine/form";
import { useMutation } from "@tanstack/react-query";
import { api, unwrap } from "../api/client.ts";
import { session } from "../auth/session.ts";
import { useT } from "../i18n/i18n.tsx";
import { ErrorAlert } from "../ui/errors.tsx";

export function SignInPage() {
  const t = useT();
  const form = useForm({ initialValues: { username: "", password: "" } });
  const signIn = useMutation({
    mutationFn: (body: { username: string; password: string }) =>
      unwrap(api.POST("/api/auth/token", { body })),
    onSuccess: (token) => session.signIn(token.access_token),
  });
  return (
    <Center mih="100dvh" p="md">
      <Paper component="main" withBorder shadow="sm" p="xl" w="100%" maw={380}>
        <form onSubmit={form.onSubmit((values) => signIn.mutate(values))}>
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
              autoFocus
              {...form.getInputProps("username")}
            />
            <PasswordInput
              label={t("signIn.password")}
              autoComplete="current-password"
              required
              {...form.getInputProps("password")}
            />
            {signIn.isError && <ErrorAlert error={signIn.error} />}
            <Button type="submit" loading={signIn.isPending}>
              {t("signIn.submit")}
            </Button>
          </Stack>
        </form>
      </Paper>
    </Center>
  );
}
