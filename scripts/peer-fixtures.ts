// `tsx scripts/peer-fixtures.ts <dir> [users]`: writes the peer panels' fixtures (issue 51) into <dir>:
// marzban/db.sqlite3 + marzban/xray_config.json, marzban/mysql.sql (load it with
// `mariadb -uroot test < …`) and 3x-ui/x-ui.db. See test/support/peer-fixtures.ts for the schemas.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { marzbanMysqlScript, writeMarzbanSqlite, writeXuiSqlite } from "../test/support/peer-fixtures.ts";

const [dir, count = "1000"] = process.argv.slice(2);
if (dir === undefined || !/^\d+$/.test(count)) {
  process.stderr.write("usage: tsx scripts/peer-fixtures.ts <dir> [users]\n");
  process.exit(2);
}
const n = Number(count);
mkdirSync(join(dir, "marzban"), { recursive: true });
mkdirSync(join(dir, "3x-ui"), { recursive: true });
const marzban = writeMarzbanSqlite(join(dir, "marzban", "db.sqlite3"), n);
writeFileSync(join(dir, "marzban", "mysql.sql"), marzbanMysqlScript(n).sql);
const xui = writeXuiSqlite(join(dir, "3x-ui", "x-ui.db"), n);
process.stdout.write(`${JSON.stringify({ marzban: { ...marzban, secret: undefined }, xui })}\n`);
