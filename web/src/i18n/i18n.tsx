// English first, with Russian, Persian (right-to-left) and Chinese: the peers' users. Every language
// is a complete Record of the English keys, so a missing translation fails the type-check. Non-English
// dictionaries load on demand and stay out of the initial bundle.
import { createContext, type ReactNode, useCallback, useContext, useEffect, useMemo, useState } from "react";
import { notifyError, setErrorLanguage } from "../ui/errors.tsx";
import { en, type MessageKey, type Messages } from "./en.ts";

export type Language = "en" | "ru" | "fa" | "zh";

export const LANGUAGES: { value: Language; label: string }[] = [
  { value: "en", label: "English" },
  { value: "ru", label: "Русский" },
  { value: "fa", label: "فارسی" },
  { value: "zh", label: "中文" },
];

const LOADERS: Record<Exclude<Language, "en">, () => Promise<Messages>> = {
  ru: () => import("./ru.ts").then((m) => m.ru),
  fa: () => import("./fa.ts").then((m) => m.fa),
  zh: () => import("./zh.ts").then((m) => m.zh),
};

const STORAGE_KEY = "portcullis.language";

function initialLanguage(): Language {
  const stored = localStorage.getItem(STORAGE_KEY);
  if (stored === "en" || stored === "ru" || stored === "fa" || stored === "zh") return stored;
  const browser = navigator.language.slice(0, 2);
  return browser === "ru" || browser === "fa" || browser === "zh" ? browser : "en";
}

export type Translate = (key: MessageKey, vars?: Record<string, string | number>) => string;

type I18n = { language: Language; dir: "ltr" | "rtl"; t: Translate; setLanguage(language: Language): void };

const I18nContext = createContext<I18n | undefined>(undefined);

export function I18nProvider({ children }: { children: ReactNode }) {
  const [language, setLanguageState] = useState<Language>(initialLanguage);
  const [messages, setMessages] = useState<Messages>(en);

  useEffect(() => {
    let isCurrent = true;
    const load = language === "en" ? Promise.resolve(en) : LOADERS[language]();
    load.then((loaded) => {
      if (!isCurrent) return;
      setMessages(loaded);
      document.documentElement.lang = language;
      document.documentElement.dir = language === "fa" ? "rtl" : "ltr";
    }, notifyError);
    return () => {
      isCurrent = false;
    };
  }, [language]);

  const t = useCallback<Translate>(
    (key, vars) => formatMessage(messages[key] ?? en[key], vars, language),
    [messages, language],
  );
  useEffect(() => setErrorLanguage(t, language), [t, language]);
  const setLanguage = useCallback((next: Language) => {
    localStorage.setItem(STORAGE_KEY, next);
    setLanguageState(next);
  }, []);
  const value = useMemo<I18n>(
    () => ({ language, dir: language === "fa" ? "rtl" : "ltr", t, setLanguage }),
    [language, t, setLanguage],
  );
  return <I18nContext.Provider value={value}>{children}</I18nContext.Provider>;
}

const PLURAL = /\{(\w+), plural, ((?:[=\w]+ \{[^{}]*\}\s*)+)\}/g;
const CHOICE = /([=\w]+) \{([^{}]*)\}/g;

/**
 * `{name}` takes a variable; `{count, plural, one {# user} other {# users}}` picks the form the
 * language's plural rules name for the number (`=0` for an exact one first), `#` being the number
 * written the language's way. A `count` variable is written that way too.
 */
export function formatMessage(
  text: string,
  vars: Record<string, string | number> | undefined,
  language: string,
): string {
  if (vars === undefined) return text;
  const numbers = new Intl.NumberFormat(language);
  const rules = new Intl.PluralRules(language);
  const written = (name: string, value: string | number) =>
    typeof value === "number" && name === "count" ? numbers.format(value) : String(value);
  return text
    .replace(PLURAL, (whole, name: string, body: string) => {
      const value = vars[name];
      if (value === undefined) return whole;
      const n = Number(value);
      const choices = new Map([...body.matchAll(CHOICE)].map((m) => [m[1], m[2] ?? ""]));
      const form = choices.get(`=${n}`) ?? choices.get(rules.select(n)) ?? choices.get("other") ?? "";
      return form.replace(/#/g, typeof value === "number" ? numbers.format(value) : value);
    })
    .replace(/\{(\w+)\}/g, (m, name: string) => {
      const value = vars[name];
      return value === undefined ? m : written(name, value);
    });
}

export function useI18n(): I18n {
  const context = useContext(I18nContext);
  if (context === undefined) throw new Error("useI18n outside I18nProvider");
  return context;
}

export function useT(): Translate {
  return useI18n().t;
}
