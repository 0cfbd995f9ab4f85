/**
 * xterm.js writes its computed styles (cell size, theme colours, scrollbar) into <style> elements, which the page's
 * Content-Security-Policy (style-src 'self') does not apply. This applies the same rules as constructable
 * stylesheets — CSSOM, which the policy allows — and keeps them in step while the elements change.
 */
export function adoptStyleElements(root: HTMLElement): () => void {
  const sheets = new Map<HTMLStyleElement, CSSStyleSheet>();
  let adopted = new Set<CSSStyleSheet>();
  const publish = () => {
    const next = new Set(sheets.values());
    document.adoptedStyleSheets = [...document.adoptedStyleSheets.filter((s) => !adopted.has(s)), ...next];
    adopted = next;
  };
  const sync = () => {
    const present = new Set(root.querySelectorAll("style"));
    for (const el of sheets.keys()) if (!present.has(el)) sheets.delete(el);
    for (const el of present) {
      let sheet = sheets.get(el);
      if (!sheet) {
        sheet = new CSSStyleSheet();
        sheets.set(el, sheet);
      }
      sheet.replaceSync(el.textContent ?? "");
    }
    publish();
  };
  const observer = new MutationObserver(sync);
  observer.observe(root, { subtree: true, childList: true, characterData: true });
  sync();
  return () => {
    observer.disconnect();
    sheets.clear();
    publish();
  };
}
