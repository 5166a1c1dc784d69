// "New user": the same fields as POST /api/users; the API's validation errors land on their fields.
import { Button, Group, Modal, NumberInput, Stack, Textarea, TextInput } from "@mantine/core";
import { type UseFormReturnType, useForm } from "@mantine/form";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { ApiError, api, unwrap } from "../../api/client.ts";
import type { UserInput } from "../../api/types.ts";
import { useT } from "../../i18n/i18n.tsx";
import { navigate } from "../../router.tsx";
import { notifyError } from "../../ui/errors.tsx";

export type UserFormValues = { name: string; comment: string; telegram_id: string | number };
type Values = UserFormValues;

export function toUserInput(values: Values): UserInput {
  return {
    name: values.name,
    comment: values.comment.trim() === "" ? null : values.comment,
    telegram_id: values.telegram_id === "" ? null : Number(values.telegram_id),
  };
}

/** Puts `body.<field>` errors of a 400 onto the form's fields; true when any landed. */
export function applyFieldErrors(
  form: { setFieldError(path: string, message: string): void },
  error: unknown,
): boolean {
  if (!(error instanceof ApiError)) return false;
  let landed = false;
  for (const e of error.problem.errors ?? []) {
    if (e.path.startsWith("body.")) {
      form.setFieldError(e.path.slice(5), e.message);
      landed = true;
    }
  }
  return landed;
}

/** The user's own fields, the same in "New user" and on the user page. */
export function UserFields({
  form,
  autoFocus = false,
  readOnly = false,
}: {
  form: UseFormReturnType<UserFormValues>;
  autoFocus?: boolean;
  /** For a role that may read users but not change them. */
  readOnly?: boolean;
}) {
  const t = useT();
  return (
    <>
      <TextInput
        label={t("users.name")}
        required
        readOnly={readOnly}
        data-autofocus={autoFocus || undefined}
        {...form.getInputProps("name")}
      />
      <NumberInput
        label={t("users.telegramId")}
        min={1}
        allowDecimal={false}
        readOnly={readOnly}
        {...form.getInputProps("telegram_id")}
      />
      <Textarea
        label={t("users.comment")}
        autosize
        minRows={2}
        readOnly={readOnly}
        {...form.getInputProps("comment")}
      />
    </>
  );
}

export function CreateUserButton() {
  const t = useT();
  const [opened, setOpened] = useState(false);
  const queryClient = useQueryClient();
  const form = useForm<Values>({ initialValues: { name: "", comment: "", telegram_id: "" } });
  const create = useMutation({
    mutationFn: (values: Values) => unwrap(api.POST("/api/users", { body: toUserInput(values) })),
    onSuccess: async (user) => {
      await queryClient.invalidateQueries({ queryKey: ["users"] });
      setOpened(false);
      form.reset();
      navigate(`/users/${user.id}`);
    },
    onError: (error) => {
      applyFieldErrors(form, error);
      notifyError(error);
    },
  });
  return (
    <>
      <Button onClick={() => setOpened(true)}>{t("users.new")}</Button>
      <Modal opened={opened} onClose={() => setOpened(false)} title={t("users.new")}>
        <form onSubmit={form.onSubmit((values) => create.mutate(values))}>
          <Stack>
            <UserFields form={form} autoFocus />
            <Group justify="flex-end">
              <Button type="submit" loading={create.isPending}>
                {t("common.create")}
              </Button>
            </Group>
          </Stack>
        </form>
      </Modal>
    </>
  );
}
