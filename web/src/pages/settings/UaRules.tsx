// The User-Agent rules: an ordered list (first match wins) edited in place: add, remove, move up and
// down with buttons (the focus stays on the moved rule's button, so the keyboard can keep moving it),
// and a field to try a User-Agent against the rules as they are on screen.
import { ActionIcon, Badge, Button, Group, Select, Stack, Text, TextInput } from "@mantine/core";
import type { UseFormReturnType } from "@mantine/form";
import { useEffect, useRef, useState } from "react";
import type { SubscriptionFormat } from "../../api/types.ts";
import { useT } from "../../i18n/i18n.tsx";
import { type RuleDraft, ruleKey, type Values } from "./values.ts";

export const FORMATS: SubscriptionFormat[] = ["base64", "links", "mihomo", "sing-box", "xray-json"];

type Form = UseFormReturnType<Values>;
type Move = "up" | "down";

function ArrowIcon({ direction }: { direction: Move }) {
  return (
    <svg
      width="16"
      height="16"
      viewBox="0 0 24 24"
      fill="none"
      stroke="currentColor"
      strokeWidth="2"
      aria-hidden
    >
      <path d={direction === "up" ? "M12 19V5M5 12l7-7 7 7" : "M12 5v14M5 12l7 7 7-7"} />
    </svg>
  );
}

function CrossIcon() {
  return (
    <svg
      width="16"
      height="16"
      viewBox="0 0 24 24"
      fill="none"
      stroke="currentColor"
      strokeWidth="2"
      aria-hidden
    >
      <path d="M18 6 6 18M6 6l12 12" />
    </svg>
  );
}

/** Which rule a User-Agent meets first, as /sub decides it (case-insensitive regular expressions). */
function tryRules(rules: RuleDraft[], userAgent: string) {
  for (const [i, rule] of rules.entries()) {
    let regex: RegExp;
    try {
      regex = new RegExp(rule.pattern, "i");
    } catch {
      return { invalid: i + 1 };
    }
    if (rule.pattern !== "" && regex.test(userAgent)) return { rule: i + 1, format: rule.format };
  }
  return {};
}

function RuleTester({ rules }: { rules: RuleDraft[] }) {
  const t = useT();
  const [userAgent, setUserAgent] = useState("");
  const result = userAgent === "" ? undefined : tryRules(rules, userAgent);
  return (
    <Stack gap={4}>
      <TextInput
        label={t("subSettings.tryUa")}
        placeholder="clash-verge/v2.0.3"
        value={userAgent}
        onChange={(e) => setUserAgent(e.currentTarget.value)}
        spellCheck={false}
      />
      {result !== undefined && (
        <Text size="sm" data-testid="ua-try-result" aria-live="polite">
          {result.invalid !== undefined
            ? t("subSettings.tryUaBad", { n: result.invalid })
            : result.rule !== undefined
              ? t("subSettings.tryUaMatch", { n: result.rule, format: result.format ?? "" })
              : t("subSettings.tryUaNone")}
        </Text>
      )}
    </Stack>
  );
}

export function UaRules({ form, readOnly }: { form: Form; readOnly: boolean }) {
  const t = useT();
  const rules = form.values.ua_rules;
  const list = useRef<HTMLDivElement>(null);
  const [focus, setFocus] = useState<{ key: number; move: Move }>();
  useEffect(() => {
    if (focus === undefined) return;
    const row = list.current?.querySelector(`[data-rule="${focus.key}"]`);
    const wanted = row?.querySelector<HTMLButtonElement>(`[data-move="${focus.move}"]:not(:disabled)`);
    (wanted ?? row?.querySelector<HTMLButtonElement>("[data-move]:not(:disabled)"))?.focus();
    setFocus(undefined);
  }, [focus]);
  const move = (index: number, by: -1 | 1) => {
    const rule = rules[index];
    if (rule === undefined) return;
    form.reorderListItem("ua_rules", { from: index, to: index + by });
    setFocus({ key: rule.key, move: by < 0 ? "up" : "down" });
  };
  return (
    <Stack gap="xs">
      {rules.length === 0 && (
        <Text size="sm" c="dimmed" data-testid="ua-rules-empty">
          {t("subSettings.rulesEmpty")}
        </Text>
      )}
      <Stack gap="xs" ref={list}>
        {rules.map((rule, i) => (
          <Group
            key={rule.key}
            gap="xs"
            align="flex-start"
            wrap="nowrap"
            data-rule={rule.key}
            data-testid="ua-rule"
          >
            <Badge variant="light" color="gray" mt={8} miw={32}>
              {i + 1}
            </Badge>
            <Group gap="xs" align="flex-start" style={{ flex: 1 }} wrap="wrap">
              <TextInput
                aria-label={t("subSettings.pattern", { n: i + 1 })}
                placeholder="^clash-verge"
                readOnly={readOnly}
                spellCheck={false}
                ff="monospace"
                style={{ flex: "1 1 240px" }}
                {...form.getInputProps(`ua_rules.${i}.pattern`)}
              />
              <Select
                aria-label={t("subSettings.format", { n: i + 1 })}
                data={FORMATS}
                allowDeselect={false}
                readOnly={readOnly}
                w={130}
                {...form.getInputProps(`ua_rules.${i}.format`)}
              />
            </Group>
            {!readOnly && (
              <Group gap={4} wrap="nowrap" mt={4}>
                <ActionIcon
                  variant="default"
                  aria-label={t("subSettings.moveUp", { n: i + 1 })}
                  disabled={i === 0}
                  data-move="up"
                  onClick={() => move(i, -1)}
                >
                  <ArrowIcon direction="up" />
                </ActionIcon>
                <ActionIcon
                  variant="default"
                  aria-label={t("subSettings.moveDown", { n: i + 1 })}
                  disabled={i === rules.length - 1}
                  data-move="down"
                  onClick={() => move(i, 1)}
                >
                  <ArrowIcon direction="down" />
                </ActionIcon>
                <ActionIcon
                  variant="subtle"
                  color="red"
                  aria-label={t("subSettings.removeRule", { n: i + 1 })}
                  onClick={() => form.removeListItem("ua_rules", i)}
                >
                  <CrossIcon />
                </ActionIcon>
              </Group>
            )}
          </Group>
        ))}
      </Stack>
      {!readOnly && (
        <Group>
          <Button
            variant="light"
            disabled={rules.length >= 100}
            onClick={() => form.insertListItem("ua_rules", { key: ruleKey(), pattern: "", format: "base64" })}
          >
            {t("subSettings.addRule")}
          </Button>
        </Group>
      )}
      <RuleTester rules={rules} />
    </Stack>
  );
}
