// Every API error reaches the operator as one plain sentence: the API's `detail`, or for the
// failures people cannot act on from the raw text (a core that does not answer, a 429) a sentence
// that says what to do and when, with the raw text behind "Details". Field errors are listed with
// their path. Inline for a page that could not load, as a notification for an action that failed.
import { Alert, List, Text } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { ApiError } from "../api/client.ts";
import { en, type MessageKey } from "../i18n/en.ts";

type Translate = (key: MessageKey, vars?: Record<string, string | number>) => string;
let translate: Translate = (key) => en[key];
let language = "en";

/** The I18nProvider hands over its translator, so messages made outside React speak the language too. */
export function setErrorLanguage(t: Translate, lang: string): void {
  translate = t;
  language = lang;
}

const CORE_CODES: Record<string, MessageKey> = {
  core_unavailable: "errors.coreUnreachable",
  core_timeout: "errors.coreTimeout",
  core_auth_failed: "errors.coreAuth",
  core_error: "errors.coreError",
};

/** A core's own error text (a server's last_error, a failed test) as the sentence a person needs. */
export function coreSentence(raw: string): string {
  if (/UNAUTHENTICATED|PERMISSION_DENIED|credential|certificate/i.test(raw))
    return translate("errors.coreAuth");
  if (/DEADLINE_EXCEEDED|timed? ?out/i.test(raw)) return translate("errors.coreTimeout");
  if (/UNAVAILABLE|ECONNREFUSED|EHOSTUNREACH|ENOTFOUND|No connection|connect/i.test(raw))
    return translate("errors.coreUnreachable");
  return translate("errors.coreError");
}

/** "15 minutes" (or seconds under a minute), in the operator's language. */
function waitFor(seconds: number): string {
  const minutes = Math.ceil(seconds / 60);
  const [value, unit] = seconds < 60 ? [Math.max(1, Math.ceil(seconds)), "second"] : [minutes, "minute"];
  return new Intl.NumberFormat(language, { style: "unit", unit, unitDisplay: "long" }).format(value);
}

type Described = {
  title: string;
  /** What the operator reads first. */
  headline: string;
  /** The raw text, behind "Details" (undefined when the headline is it). */
  detail?: string;
  errors: { path: string; message: string }[];
};

export function describe(error: unknown): Described {
  if (error instanceof ApiError) {
    const { problem } = error;
    const title = problem.status > 0 ? `${problem.status} ${problem.title} (${problem.code})` : problem.title;
    const errors = problem.errors ?? [];
    if (problem.status === 429 && error.retryAfterSeconds !== undefined) {
      const at = new Date(Date.now() + error.retryAfterSeconds * 1000);
      const time = at.toLocaleTimeString(language, { hour: "2-digit", minute: "2-digit" });
      const headline = translate("errors.rateLimited", { wait: waitFor(error.retryAfterSeconds), time });
      return { title, headline, detail: problem.detail, errors };
    }
    const core = CORE_CODES[problem.code];
    if (core !== undefined) return { title, headline: translate(core), detail: problem.detail, errors };
    return { title, headline: problem.detail, errors };
  }
  return { title: "Error", headline: error instanceof Error ? error.message : String(error), errors: [] };
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

/** The raw text of a failure, folded: open it to read or copy it. */
export function Details({ text }: { text: string }) {
  return (
    <details data-testid="error-details">
      <summary>
        <Text span size="xs">
          {translate("errors.details")}
        </Text>
      </summary>
      <Text size="xs" ff="monospace" style={{ wordBreak: "break-word" }}>
        {text}
      </Text>
    </details>
  );
}

function Body({ described, testId }: { described: Described; testId?: string }) {
  return (
    <>
      <Text size="sm" data-testid={testId}>
        {described.headline}
      </Text>
      {described.detail !== undefined && <Details text={described.detail} />}
      <FieldErrors errors={described.errors} />
    </>
  );
}

export function ErrorAlert({ error }: { error: unknown }) {
  const described = describe(error);
  return (
    <Alert color="red" title={described.title} role="alert" data-testid="error-alert">
      <Body described={described} />
    </Alert>
  );
}

/** A server's last error from its core: one sentence, the core's words behind "Details". */
export function CoreProblem({ raw, title }: { raw: string; title?: string }) {
  return (
    <Alert color="red" p="xs" title={title} data-testid="server-last-error">
      <Text size="sm">{coreSentence(raw)}</Text>
      <Details text={raw} />
    </Alert>
  );
}

export function notifyError(error: unknown): void {
  const described = describe(error);
  notifications.show({
    color: "red",
    title: described.title,
    autoClose: 10_000,
    message: <Body described={described} testId="error-detail" />,
  });
}

/** A failure a core reported in a successful answer (a server test): its sentence, the text behind Details. */
export function notifyCoreFailure(raw: string): void {
  notifications.show({
    color: "red",
    autoClose: 10_000,
    message: <Body described={{ title: "", headline: coreSentence(raw), detail: raw, errors: [] }} />,
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
