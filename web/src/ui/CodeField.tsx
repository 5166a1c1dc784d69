// A document edited as text (JSON or YAML) with the service's validation errors listed under it, each
// with its path and line; a click on one selects that line. Shared by the template editor and the
// subscription settings' base documents. The caller parses and locates (it knows the language).
import { Alert, List, Stack, Textarea, UnstyledButton } from "@mantine/core";
import { useRef } from "react";
import { type Translate, useT } from "../i18n/i18n.tsx";
import { type Position, syntaxError } from "../json/locate.ts";

export type LocatedError = { path: string; message: string; at: Position | undefined };

/** A JSON text's syntax error as the field shows it (with its line when found), or undefined. */
export function jsonSyntax(t: Translate, text: string): string | undefined {
  const syntax = syntaxError(text);
  if (syntax === undefined) return undefined;
  const line = syntax.position ? ` (${t("templates.line", { line: syntax.position.line })})` : "";
  return `${t("templates.syntax")}${line}: ${syntax.message}`;
}

export function CodeField({
  label,
  description,
  value,
  onChange,
  readOnly,
  syntaxError,
  errors,
  testId,
}: {
  label: string;
  description?: string;
  value: string;
  onChange: (value: string) => void;
  readOnly: boolean;
  /** The text does not parse: shown as the field's error (with its line, said by the caller). */
  syntaxError: string | undefined;
  errors: LocatedError[];
  testId: string;
}) {
  const t = useT();
  const fieldRef = useRef<HTMLTextAreaElement>(null);
  const jump = (at: Position | undefined) => {
    const area = fieldRef.current;
    if (area === null || at === undefined) return;
    area.focus();
    const lineEnd = value.indexOf("\n", at.offset);
    area.setSelectionRange(at.offset, lineEnd < 0 ? value.length : lineEnd);
  };
  return (
    <Stack gap={4}>
      <Textarea
        ref={fieldRef}
        label={label}
        description={description}
        value={value}
        onChange={(e) => onChange(e.currentTarget.value)}
        readOnly={readOnly}
        autosize
        minRows={6}
        maxRows={30}
        spellCheck={false}
        styles={{ input: { fontFamily: "var(--mantine-font-family-monospace)", fontSize: 13 } }}
        error={syntaxError}
        data-testid={testId}
      />
      {errors.length > 0 && (
        <Alert color="red" p="xs" data-testid={`${testId}-errors`}>
          <List size="sm">
            {errors.map((e) => (
              <List.Item key={`${e.path}:${e.message}`}>
                <UnstyledButton onClick={() => jump(e.at)} fz="sm" td={e.at ? "underline" : undefined}>
                  {e.at ? `${t("templates.line", { line: e.at.line })} · ` : ""}
                  <code>{e.path}</code>
                </UnstyledButton>{" "}
                {e.message}
              </List.Item>
            ))}
          </List>
        </Alert>
      )}
    </Stack>
  );
}
