// Every API error reaches the operator with its `detail` (and each field error with its path):
// inline for a page that could not load, as a notification for an action that failed.
import { Alert, List, Text } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { ApiError } from "../api/client.ts";

function describe(error: unknown): {
  title: string;
  detail: string;
  errors: { path: string; message: string }[];
} {
  if (error instanceof ApiError) {
    const { problem } = error;
    const title = problem.status > 0 ? `${problem.status} ${problem.title} (${problem.code})` : problem.title;
    return { title, detail: problem.detail, errors: problem.errors ?? [] };
  }
  return { title: "Error", detail: error instanceof Error ? error.message : String(error), errors: [] };
}

function FieldErrors({ errors }: { errors: { path: string; message: string }[] }) {
  if (errors.length === 0) return null;
  return (
    <List size="sm" mt={4}>
      {errors.map((e) => (
        <List.Item key={`${e.path}:${e.message}`}>
          <code>{e.path}</code> {e.message}
        </List.Item>
      ))}
    </List>
  );
}

export function ErrorAlert({ error }: { error: unknown }) {
  const { title, detail, errors } = describe(error);
  return (
    <Alert color="red" title={title} role="alert" data-testid="error-alert">
      <Text size="sm">{detail}</Text>
      <FieldErrors errors={errors} />
    </Alert>
  );
}

export function notifyError(error: unknown): void {
  const { title, detail, errors } = describe(error);
  notifications.show({
    color: "red",
    title,
    autoClose: 10_000,
    message: (
      <>
        <Text size="sm" data-testid="error-detail">
          {detail}
        </Text>
        <FieldErrors errors={errors} />
      </>
    ),
  });
}

export function notifyDone(message: string): void {
  notifications.show({ color: "teal", message, autoClose: 3000 });
}

/** Puts `body.<field>` errors of a 400 onto a form's fields; true when any landed. */
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
