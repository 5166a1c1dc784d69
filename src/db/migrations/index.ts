// The ordered list of migrations; both dialects run the same list. Add new files at the end.
import type { Kysely } from "kysely";
import type { DialectName } from "../dialect.ts";
import * as m0001 from "./0001_foundation.ts";
import * as m0003 from "./0003_servers.ts";
import * as m0004templates from "./0004_templates.ts";
import * as m0005 from "./0005_certificates.ts";
import * as m0006 from "./0006_provisioning.ts";
import * as m0007 from "./0007_convergence.ts";
import * as m0008 from "./0008_subscription_changes.ts";
import * as m0009 from "./0009_admin_roles_audit.ts";
import * as m0010 from "./0010_wire_layout.ts";
import * as m0011 from "./0011_user_name_search.ts";
import * as m0012 from "./0012_notifications.ts";
import * as m0014 from "./0014_subscription_tokens.ts";
import * as m0015 from "./0015_user_lifecycle.ts";
import * as m0016 from "./0016_usage_history.ts";
import * as m0017 from "./0017_subscription_lifecycle.ts";
import * as m0018 from "./0018_user_filters.ts";
import * as m0019 from "./0019_grant_sync_revision.ts";
import * as m0020 from "./0020_nodes.ts";
import * as m0021 from "./0021_sub_by_id_revoked.ts";
import * as m0022 from "./0022_inbound_hosts.ts";
import * as m0023 from "./0023_user_announce.ts";
import * as m0024 from "./0024_offline_servers.ts";
import * as m0026 from "./0026_groups.ts";
import * as m0027 from "./0027_fair_use.ts";
import * as m0028 from "./0028_imports.ts";
import * as m0029 from "./0029_triggers_from_code.ts";
import * as m0030 from "./0030_plans.ts";
import * as m0031 from "./0031_resellers.ts";
import * as m0032 from "./0032_devices.ts";
import * as m0033 from "./0033_reseller_plans.ts";
import * as m0034 from "./0034_traffic_journal.ts";
import * as m0035 from "./0035_panel_instances.ts";
import * as m0036 from "./0036_grants_by_server_order.ts";
import * as m0037 from "./0037_user_access_fillfactor.ts";
import * as m0038 from "./0038_users_fair_use_blocked.ts";

export type MigrationModule = { up: (db: Kysely<unknown>, dialect: DialectName) => Promise<void> };

export const migrations: Record<string, MigrationModule> = {
  "0001_foundation": m0001,
  "0003_servers": m0003,
  "0004_templates": m0004templates,
  "0005_certificates": m0005,
  "0006_provisioning": m0006,
  "0007_convergence": m0007,
  "0008_subscription_changes": m0008,
  "0009_admin_roles_audit": m0009,
  "0010_wire_layout": m0010,
  "0011_user_name_search": m0011,
  "0012_notifications": m0012,
  "0014_subscription_tokens": m0014,
  "0015_user_lifecycle": m0015,
  "0016_usage_history": m0016,
  "0017_subscription_lifecycle": m0017,
  "0018_user_filters": m0018,
  "0019_grant_sync_revision": m0019,
  "0020_nodes": m0020,
  "0021_sub_by_id_revoked": m0021,
  "0022_inbound_hosts": m0022,
  "0023_user_announce": m0023,
  "0024_offline_servers": m0024,
  "0026_groups": m0026,
  "0027_fair_use": m0027,
  "0028_imports": m0028,
  "0029_triggers_from_code": m0029,
  "0030_plans": m0030,
  "0031_resellers": m0031,
  "0032_devices": m0032,
  "0033_reseller_plans": m0033,
  "0034_traffic_journal": m0034,
  "0035_panel_instances": m0035,
  "0036_grants_by_server_order": m0036,
  "0037_user_access_fillfactor": m0037,
  "0038_users_fair_use_blocked": m0038,
};
