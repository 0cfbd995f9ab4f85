/**
 * Content-Security-Policy violations a page meets, as the browser reports them: every `securitypolicyviolation`
 * event (logged to the console by a script the page gets before its own) and every console line the browser
 * writes about a refused load. A UI test watches its page and expects none.
 */
import type { Page } from "playwright-core";

export interface CspWatch {
  /** What was refused so far, one line each. */
  violations(): string[];
}

const MARK = "CSP violation:";

export async function watchCsp(page: Page): Promise<CspWatch> {
  const seen: string[] = [];
  await page.addInitScript((mark: string) => {
    document.addEventListener("securitypolicyviolation", (e) => {
      console.error(`${mark} ${e.effectiveDirective} blocked ${e.blockedURI || "(inline)"} in ${e.sourceFile}`);
    });
  }, MARK);
  page.on("console", (message) => {
    const text = message.text();
    if (text.startsWith(MARK) || /Content Security Policy/i.test(text)) seen.push(text);
  });
  return { violations: () => [...seen] };
}
