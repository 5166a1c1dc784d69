// The signed-in admin's own second factor: enrol (the API's QR code and the secret), confirm with a
// first code, the ten recovery codes shown once (copy, download), and turn it off with a code.

import {
  Alert,
  Anchor,
  Badge,
  Button,
  Card,
  Code,
  Group,
  Image,
  List,
  Modal,
  Stack,
  Text,
  TextInput,
  Title,
} from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { accountApi } from "../../api/admin.ts";
import { keys } from "../../api/keys.ts";
import { useChange } from "../../api/mutation.ts";
import type { TotpEnrolment } from "../../api/types.ts";
import { useMe } from "../../auth/me.ts";
import { useT } from "../../i18n/i18n.tsx";
import { Copy } from "../../ui/Copy.tsx";
import { ErrorAlert, notifyDone } from "../../ui/errors.tsx";

const digits = (value: string) => value.replace(/\D/g, "").slice(0, 6);

/** The recovery codes, shown once: copy them, download them, or write them down. */
function RecoveryCodes({
  codes,
  username,
  onClose,
}: {
  codes: string[];
  username: string;
  onClose: () => void;
}) {
  const t = useT();
  const text = `${codes.join("\n")}\n`;
  const download = () => {
    // A blob: URL the browser saves; no data ever leaves the page.
    const url = URL.createObjectURL(new Blob([text], { type: "text/plain" }));
    const link = document.createElement("a");
    link.href = url;
    link.download = `portcullis-recovery-codes-${username}.txt`;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  };
  return (
    <Modal opened onClose={onClose} title={t("totp.recoveryTitle")} closeOnClickOutside={false}>
      <Stack>
        <Alert color="yellow">{t("totp.recoveryShownOnce")}</Alert>
        <Code block data-testid="recovery-codes">
          {text}
        </Code>
        <Group justify="space-between">
          <Group gap="xs">
            <Copy value={text} label={t("totp.copyCodes")} />
            <Button variant="default" size="xs" onClick={download}>
              {t("totp.downloadCodes")}
            </Button>
          </Group>
          <Button onClick={onClose}>{t("apiKeys.stored")}</Button>
        </Group>
      </Stack>
    </Modal>
  );
}

function Enrol({
  enrolment,
  onCancel,
  onConfirmed,
}: {
  enrolment: TotpEnrolment;
  onCancel: () => void;
  onConfirmed: (codes: string[]) => void;
}) {
  const t = useT();
  const [code, setCode] = useState("");
  const confirm = useChange(() => accountApi.confirmTotp(code), {
    quiet: true,
    onSuccess: (result) => onConfirmed(result.recovery_codes),
    onError: () => setCode(""),
  });
  // The API's SVG as an image: rendered by the browser's image decoder, never as markup in the page.
  const qr = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(enrolment.qr_svg)}`;
  return (
    <Stack>
      <Text size="sm">{t("totp.scan")}</Text>
      <Image src={qr} alt={t("totp.qrAlt")} w={200} h={200} bg="white" data-testid="totp-qr" />
      <Group gap="xs" wrap="nowrap">
        <Text size="sm">{t("totp.secret")}</Text>
        <Code data-testid="totp-secret" style={{ wordBreak: "break-all" }}>
          {enrolment.secret}
        </Code>
        <Copy value={enrolment.secret} label={t("totp.copySecret")} />
      </Group>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          confirm.mutate();
        }}
      >
        <Group align="flex-end" wrap="wrap">
          <TextInput
            label={t("totp.code")}
            required
            autoComplete="one-time-code"
            inputMode="numeric"
            maxLength={6}
            placeholder="123456"
            value={code}
            onChange={(e) => setCode(digits(e.currentTarget.value))}
            w={160}
          />
          <Button type="submit" loading={confirm.isPending} disabled={code.length !== 6}>
            {t("totp.confirm")}
          </Button>
          <Button variant="default" onClick={onCancel}>
            {t("common.cancel")}
          </Button>
        </Group>
      </form>
      {confirm.isError && <ErrorAlert error={confirm.error} />}
    </Stack>
  );
}

function Disable() {
  const t = useT();
  const [useRecovery, setUseRecovery] = useState(false);
  const [value, setValue] = useState("");
  const disable = useChange(
    () => accountApi.disableTotp(useRecovery ? { recovery_code: value.trim() } : { totp_code: value }),
    {
      quiet: true,
      invalidates: [keys.me()],
      done: t("totp.disabled"),
      onSuccess: () => setValue(""),
      onError: () => setValue(""),
    },
  );
  return (
    <Stack gap="xs">
      <form
        onSubmit={(e) => {
          e.preventDefault();
          disable.mutate();
        }}
      >
        <Group align="flex-end" wrap="wrap">
          <TextInput
            label={useRecovery ? t("signIn.recoveryCode") : t("totp.code")}
            required
            autoComplete="off"
            inputMode={useRecovery ? "text" : "numeric"}
            placeholder={useRecovery ? "xxxxx-xxxxx" : "123456"}
            value={value}
            onChange={(e) => setValue(useRecovery ? e.currentTarget.value : digits(e.currentTarget.value))}
            w={200}
          />
          <Button type="submit" color="red" variant="light" loading={disable.isPending}>
            {t("totp.disable")}
          </Button>
        </Group>
      </form>
      <Anchor
        component="button"
        type="button"
        size="sm"
        ta="start"
        onClick={() => {
          setUseRecovery(!useRecovery);
          setValue("");
        }}
      >
        {useRecovery ? t("signIn.useCode") : t("signIn.useRecovery")}
      </Anchor>
      {disable.isError && <ErrorAlert error={disable.error} />}
    </Stack>
  );
}

export function TwoFactor() {
  const t = useT();
  const queryClient = useQueryClient();
  const { me } = useMe();
  const [enrolment, setEnrolment] = useState<TotpEnrolment>();
  // Kept here, not in the enrolment form: they stay on screen whatever /me answers meanwhile.
  const [codes, setCodes] = useState<string[]>();
  const enrol = useChange(accountApi.enrolTotp, { quiet: true, onSuccess: setEnrolment });
  const isOn = me?.totp_enabled === true;
  return (
    <Card withBorder>
      <Stack>
        <Group justify="space-between">
          <Title order={3}>{t("totp.title")}</Title>
          {me !== undefined && (
            <Badge color={isOn ? "teal" : "gray"} variant="light" data-testid="totp-status">
              {isOn ? t("totp.on") : t("totp.off")}
            </Badge>
          )}
        </Group>
        <Text size="sm" c="dimmed">
          {t("totp.hint")}
        </Text>
        {me?.token_kind === "api_key" && <Alert color="yellow">{t("totp.needsSession")}</Alert>}
        {me !== undefined && !isOn && enrolment === undefined && (
          <Group>
            <Button onClick={() => enrol.mutate()} loading={enrol.isPending}>
              {t("totp.enrol")}
            </Button>
          </Group>
        )}
        {enrol.isError && <ErrorAlert error={enrol.error} />}
        {!isOn && enrolment !== undefined && (
          <Enrol
            enrolment={enrolment}
            onCancel={() => setEnrolment(undefined)}
            onConfirmed={(confirmed) => {
              setCodes(confirmed);
              setEnrolment(undefined);
              void queryClient.invalidateQueries({ queryKey: keys.me() });
              notifyDone(t("totp.enabled"));
            }}
          />
        )}
        {codes !== undefined && (
          <RecoveryCodes
            codes={codes}
            username={me?.username ?? "admin"}
            onClose={() => setCodes(undefined)}
          />
        )}
        {isOn && (
          <>
            <List size="sm">
              <List.Item>{t("totp.onHint")}</List.Item>
            </List>
            <Disable />
          </>
        )}
      </Stack>
    </Card>
  );
}
