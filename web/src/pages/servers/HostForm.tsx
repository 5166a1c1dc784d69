// A host of an inbound, new or edited (issue 48): where clients connect (address, port), the entry's
// remark template, the TLS names and Host headers (one of each chosen per fetch), path, ALPN, uTLS
// fingerprint, the security override for TLS terminated in front of the inbound, and the extras a
// format may carry (mux, fragment, noise). An empty field is the inbound's own value. A refused save
// lands on the field the API names; a problem with no field is shown above the buttons.
import {
  Alert,
  Fieldset,
  JsonInput,
  Modal,
  MultiSelect,
  NumberInput,
  Select,
  SimpleGrid,
  Stack,
  Switch,
  TagsInput,
  Text,
  TextInput,
} from "@mantine/core";
import { useForm } from "@mantine/form";
import { useState } from "react";
import { ApiError } from "../../api/client.ts";
import { hostsApi, type InboundPath } from "../../api/hosts.ts";
import { keys } from "../../api/keys.ts";
import { useChange } from "../../api/mutation.ts";
import type { Host } from "../../api/types.ts";
import { useT } from "../../i18n/i18n.tsx";
import { FormButtons } from "../../ui/Scaffold.tsx";
import {
  ALPNS,
  EXCLUDABLE,
  FINGERPRINTS,
  fieldOf,
  type HostValues,
  hostBody,
  hostValues,
  NEW_HOST,
  SECURITIES,
} from "./hostForm.ts";

export function HostFormModal({
  path,
  tag,
  host,
  onClose,
}: {
  path: InboundPath;
  tag: string;
  host?: Host;
  onClose: () => void;
}) {
  const t = useT();
  const form = useForm<HostValues>({ initialValues: host === undefined ? NEW_HOST : hostValues(host) });
  const [unplaced, setUnplaced] = useState<string[]>([]);
  const save = useChange(
    (values: HostValues) => {
      const body = hostBody(values);
      return host === undefined
        ? hostsApi.create(path, body)
        : hostsApi.update({ ...path, host_id: host.id }, body);
    },
    {
      invalidates: [keys.servers.hosts(path.server_id, path.inbound_id)],
      done: host === undefined ? t("hosts.created") : t("common.saved"),
      onSuccess: onClose,
      quiet: true,
      onError: (error) => {
        const left: string[] = [];
        if (error instanceof SyntaxError) form.setFieldError("noise", t("hosts.noiseJson"));
        else if (error instanceof ApiError) {
          for (const e of error.problem.errors ?? []) {
            const field = fieldOf(e.path);
            if (field === undefined) left.push(e.message);
            else form.setFieldError(field, e.message);
          }
          if ((error.problem.errors ?? []).length === 0) left.push(error.problem.detail ?? error.message);
        } else left.push(error instanceof Error ? error.message : String(error));
        setUnplaced(left);
      },
    },
  );
  const input = (field: keyof HostValues) => form.getInputProps(field);
  const toggle = (field: keyof HostValues) => form.getInputProps(field, { type: "checkbox" });
  return (
    <Modal
      opened
      onClose={onClose}
      size="lg"
      title={host === undefined ? t("hosts.new", { tag }) : t("hosts.edit", { tag })}
    >
      <form
        noValidate
        onSubmit={form.onSubmit((values) => {
          setUnplaced([]);
          save.mutate(values);
        })}
      >
        <Stack>
          <Text size="sm" c="dimmed">
            {t("hosts.formHint")}
          </Text>
          <SimpleGrid cols={{ base: 1, xs: 2 }}>
            <TextInput
              label={t("hosts.address")}
              description={t("hosts.addressHint")}
              placeholder="cdn.example.com"
              spellCheck={false}
              data-autofocus
              {...input("address")}
            />
            <NumberInput
              label={t("hosts.port")}
              description={t("hosts.portHint")}
              min={1}
              max={65535}
              allowDecimal={false}
              {...input("port")}
            />
          </SimpleGrid>
          <TextInput
            label={t("hosts.remark")}
            description={t("hosts.remarkHint")}
            placeholder="{SERVER} CDN · {DATA_LEFT}"
            maxLength={200}
            {...input("remark")}
          />
          <Select
            label={t("hosts.security")}
            description={t("hosts.securityHint")}
            data={SECURITIES.map((value) => ({ value, label: t(`hosts.security.${value}`) }))}
            allowDeselect={false}
            {...input("security")}
          />
          <SimpleGrid cols={{ base: 1, xs: 2 }}>
            <TagsInput
              label={t("hosts.sni")}
              description={t("hosts.listHint")}
              maxTags={16}
              splitChars={[",", " "]}
              {...input("sni")}
            />
            <TagsInput
              label={t("hosts.hostHeader")}
              description={t("hosts.listHint")}
              maxTags={16}
              splitChars={[",", " "]}
              {...input("host")}
            />
          </SimpleGrid>
          <SimpleGrid cols={{ base: 1, xs: 3 }}>
            <TextInput label={t("hosts.path")} placeholder="/ws" spellCheck={false} {...input("path")} />
            <MultiSelect label={t("hosts.alpn")} data={[...ALPNS]} {...input("alpn")} />
            <Select
              label={t("hosts.fingerprint")}
              data={[...FINGERPRINTS]}
              clearable
              placeholder={t("hosts.inboundsOwn")}
              {...input("fingerprint")}
            />
          </SimpleGrid>
          <SimpleGrid cols={{ base: 1, xs: 2 }}>
            <Switch label={t("hosts.allowInsecure")} {...toggle("allow_insecure")} />
            <Switch label={t("hosts.disabled")} {...toggle("is_disabled")} />
            <Switch
              label={t("hosts.followsHealth")}
              description={t("hosts.followsHealthHint")}
              {...toggle("follows_health")}
            />
          </SimpleGrid>
          <MultiSelect
            label={t("hosts.excludeFrom")}
            description={t("hosts.excludeFromHint")}
            data={[...EXCLUDABLE]}
            {...input("exclude_from")}
          />
          <Fieldset legend={t("hosts.extras")} variant="filled">
            <Stack gap="xs">
              <Text size="xs" c="dimmed">
                {t("hosts.extrasHint")}
              </Text>
              <NumberInput
                label={t("hosts.mux")}
                min={1}
                max={1024}
                allowDecimal={false}
                {...input("mux_concurrency")}
              />
              <SimpleGrid cols={{ base: 1, xs: 3 }}>
                <TextInput
                  label={t("hosts.fragmentPackets")}
                  placeholder="tlshello"
                  {...input("fragment_packets")}
                />
                <TextInput
                  label={t("hosts.fragmentLength")}
                  placeholder="100-200"
                  {...input("fragment_length")}
                />
                <TextInput
                  label={t("hosts.fragmentInterval")}
                  placeholder="10-20"
                  {...input("fragment_interval")}
                />
              </SimpleGrid>
              <JsonInput
                label={t("hosts.noise")}
                placeholder='[{"type": "rand", "packet": "10-20", "delay": "10-16"}]'
                autosize
                minRows={2}
                validationError={t("hosts.noiseJson")}
                {...input("noise")}
              />
            </Stack>
          </Fieldset>
          {unplaced.length > 0 && (
            <Alert color="red" role="alert" data-testid="host-error">
              {unplaced.join("; ")}
            </Alert>
          )}
          <FormButtons
            onCancel={onClose}
            isSaving={save.isPending}
            label={host === undefined ? t("common.create") : t("common.save")}
          />
        </Stack>
      </form>
    </Modal>
  );
}
