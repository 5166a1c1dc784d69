// The subscription page a person gets when they open their URL in a browser: name, usage, the URL
// with a QR code and a copy button, one-tap import buttons for the common apps (each with its own QR
// code), the links themselves. Server-rendered, no external assets: styles and the copy script carry
// a per-response nonce, QR codes are SVG data: images; the policy forbids everything else and framing.
// English, Russian, Persian (right to left) and Chinese, chosen by Accept-Language.
import { qrSvgDataUri } from "../../lib/qr.ts";

type Texts = {
  lang: string;
  dir: "ltr" | "rtl";
  heading: string;
  status: string;
  active: string;
  onHold: string;
  used: string;
  unlimited: string;
  expires: string;
  never: string;
  url: string;
  copy: string;
  copied: string;
  apps: string;
  links: string;
  noLinks: string;
};

const TEXTS: Record<string, Texts> = {
  en: {
    lang: "en",
    dir: "ltr",
    heading: "Your subscription",
    status: "Status",
    active: "active",
    onHold: "starts with the first connection",
    used: "Used",
    unlimited: "no limit",
    expires: "Expires",
    never: "never",
    url: "Subscription URL",
    copy: "Copy",
    copied: "Copied",
    apps: "Add to an app",
    links: "Configurations",
    noLinks: "No configurations yet.",
  },
  ru: {
    lang: "ru",
    dir: "ltr",
    heading: "Ваша подписка",
    status: "Статус",
    active: "активна",
    onHold: "начнётся с первого подключения",
    used: "Использовано",
    unlimited: "без лимита",
    expires: "Истекает",
    never: "никогда",
    url: "Ссылка на подписку",
    copy: "Копировать",
    copied: "Скопировано",
    apps: "Добавить в приложение",
    links: "Конфигурации",
    noLinks: "Конфигураций пока нет.",
  },
  fa: {
    lang: "fa",
    dir: "rtl",
    heading: "اشتراک شما",
    status: "وضعیت",
    active: "فعال",
    onHold: "با اولین اتصال آغاز می‌شود",
    used: "مصرف‌شده",
    unlimited: "بدون محدودیت",
    expires: "انقضا",
    never: "هرگز",
    url: "نشانی اشتراک",
    copy: "کپی",
    copied: "کپی شد",
    apps: "افزودن به برنامه",
    links: "پیکربندی‌ها",
    noLinks: "هنوز پیکربندی‌ای وجود ندارد.",
  },
  zh: {
    lang: "zh",
    dir: "ltr",
    heading: "您的订阅",
    status: "状态",
    active: "有效",
    onHold: "首次连接时开始",
    used: "已用流量",
    unlimited: "不限量",
    expires: "到期",
    never: "永不",
    url: "订阅链接",
    copy: "复制",
    copied: "已复制",
    apps: "添加到应用",
    links: "配置",
    noLinks: "暂无配置。",
  },
};

/** The first supported language of Accept-Language (by q), else English. */
export function pageLanguage(acceptLanguage: string | undefined): string {
  const ranked = (acceptLanguage ?? "")
    .split(",")
    .map((part, i) => {
      const [tag = "", ...params] = part.trim().split(";");
      const q = Number(
        params
          .find((p) => p.trim().startsWith("q="))
          ?.trim()
          .slice(2) ?? "1",
      );
      return { lang: tag.toLowerCase().split("-")[0] ?? "", q: Number.isFinite(q) ? q : 0, i };
    })
    .filter((item) => item.q > 0)
    .sort((a, b) => b.q - a.q || a.i - b.i);
  return ranked.find((item) => item.lang in TEXTS)?.lang ?? "en";
}

/** The one-tap import links of the common apps for a subscription URL. */
export function importLinks(url: string, name: string): { app: string; href: string }[] {
  const u = encodeURIComponent(url);
  const n = encodeURIComponent(name);
  return [
    { app: "v2rayNG", href: `v2rayng://install-config?url=${u}#${n}` },
    { app: "Hiddify", href: `hiddify://import/${url}#${n}` },
    { app: "Happ", href: `happ://add/${url}` },
    { app: "Streisand", href: `streisand://import/${url}#${n}` },
    { app: "Shadowrocket", href: `shadowrocket://add/${url}` },
    {
      app: "Clash / mihomo",
      href: `clash://install-config?url=${encodeURIComponent(`${url}/mihomo`)}&name=${n}`,
    },
    {
      app: "sing-box",
      href: `sing-box://import-remote-profile?url=${encodeURIComponent(`${url}/sing-box`)}#${n}`,
    },
  ];
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function bytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(unit === 0 ? 0 : 1)} ${units[unit]}`;
}

export type PageInput = {
  userName: string;
  uploadBytes: number;
  downloadBytes: number;
  /** The data limit; null or 0: unlimited. */
  totalBytes?: number | null;
  /** ISO; null: never. */
  expireAt?: string | null;
  /** active (default), on_hold, or the placeholder's text of a user who gets no links. */
  status?: { kind: "active" | "on_hold" } | { kind: "blocked"; text: string };
  links: readonly string[];
  url: string;
  title: string | null;
  note: string | null;
  language: string;
  nonce: string;
};

export function pagePolicy(nonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    "img-src data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

const STYLE = `
*{box-sizing:border-box}body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",Tahoma,sans-serif;background:#f4f6fb;color:#1c2330}
main{max-width:880px;margin:0 auto;padding:16px}h1{font-size:1.5rem;margin:8px 0 16px}h2{font-size:1.1rem;margin:24px 0 8px}
.card{background:#fff;border-radius:12px;padding:16px;box-shadow:0 1px 3px rgba(0,0,0,.08);margin-bottom:12px}
.row{display:flex;flex-wrap:wrap;gap:12px;align-items:center}.stat{flex:1 1 140px}.stat b{display:block;font-size:1.1rem}
.bar{height:8px;border-radius:4px;background:#e3e8f2;overflow:hidden;margin-top:6px}.bar i{display:block;height:100%;background:#3b6fe0;width:0}
.url{font-family:ui-monospace,Menlo,Consolas,monospace;word-break:break-all;background:#f0f3f9;border-radius:8px;padding:8px;flex:1 1 240px}
button,.app{border:0;border-radius:8px;background:#3b6fe0;color:#fff;padding:10px 14px;font:inherit;cursor:pointer;text-decoration:none;display:inline-block}
.apps{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:12px}.apps .card{text-align:center;margin:0}
img.qr{width:100%;max-width:220px;height:auto;image-rendering:pixelated;background:#fff}.links li{word-break:break-all;margin-bottom:8px;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.85rem}
.note{white-space:pre-wrap}[dir=rtl] .url,[dir=rtl] .links li{direction:ltr;text-align:left}
@media (prefers-color-scheme:dark){body{background:#12151c;color:#e4e8f0}.card{background:#1c212b}.url{background:#262c38}.bar{background:#2c3342}}
`;

const SCRIPT = `document.querySelectorAll("[data-copy]").forEach(function(b){b.addEventListener("click",function(){var t=b.getAttribute("data-copy");var done=function(){b.textContent=b.getAttribute("data-copied")};if(navigator.clipboard){navigator.clipboard.writeText(t).then(done,function(){})}else{var a=document.createElement("textarea");a.value=t;document.body.appendChild(a);a.select();document.execCommand("copy");a.remove();done()}})});`;

export function renderPage(input: PageInput): string {
  const t = TEXTS[input.language] ?? (TEXTS.en as Texts);
  const used = input.uploadBytes + input.downloadBytes;
  const total = input.totalBytes ?? 0;
  const percent = total > 0 ? Math.min(100, Math.round((used / total) * 100)) : 0;
  const status = input.status ?? { kind: "active" };
  const statusText =
    status.kind === "blocked" ? escapeHtml(status.text) : status.kind === "on_hold" ? t.onHold : t.active;
  const expires = input.expireAt == null ? t.never : escapeHtml(input.expireAt.slice(0, 10));
  const heading = input.title ?? t.heading;
  const apps = importLinks(input.url, input.userName)
    .map(
      ({ app, href }) =>
        `<div class="card"><a class="app" href="${escapeHtml(href)}">${escapeHtml(app)}</a><br><img class="qr" alt="QR ${escapeHtml(app)}" data-qr="${escapeHtml(href)}" src="${qrSvgDataUri(href)}"></div>`,
    )
    .join("");
  const links =
    input.links.length === 0
      ? `<p>${t.noLinks}</p>`
      : `<ol class="links">${input.links.map((link) => `<li>${escapeHtml(link)}</li>`).join("")}</ol>`;
  return `<!doctype html>
<html lang="${t.lang}" dir="${t.dir}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer"><meta name="robots" content="noindex">
<title>${escapeHtml(heading)} · ${escapeHtml(input.userName)}</title><style nonce="${input.nonce}">${STYLE}.bar i{width:${percent}%}</style></head>
<body><main>
<h1>${escapeHtml(heading)}: <bdi>${escapeHtml(input.userName)}</bdi></h1>
<div class="card row">
<div class="stat">${t.status}<b data-status>${statusText}</b></div>
<div class="stat">${t.used}<b data-used><bdi>${bytes(used)}</bdi> / ${total > 0 ? `<bdi>${bytes(total)}</bdi>` : t.unlimited}</b><div class="bar"><i></i></div></div>
<div class="stat">${t.expires}<b data-expires>${expires}</b></div>
</div>
${input.note === null ? "" : `<div class="card note">${escapeHtml(input.note)}</div>`}
<h2>${t.url}</h2>
<div class="card row"><div class="url" data-url>${escapeHtml(input.url)}</div><button type="button" data-copy="${escapeHtml(input.url)}" data-copied="${t.copied}">${t.copy}</button>
<img class="qr" alt="QR" data-qr="${escapeHtml(input.url)}" src="${qrSvgDataUri(input.url)}"></div>
<h2>${t.apps}</h2><div class="apps">${apps}</div>
<h2>${t.links}</h2><div class="card">${links}</div>
</main><script nonce="${input.nonce}">${SCRIPT}</script></body></html>`;
}
