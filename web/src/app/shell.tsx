/**
 * The app's frame: the header (brand, navigation, the account's usage, sign-out) and the page the path names. A
 * person who is not signed in gets the sign-in page whatever the path, and the page they asked for after it.
 */
import type { ComponentChildren } from "preact";
import { useEffect } from "preact/hooks";
import { account, leave, offline, usageReport } from "./account";
import { APP_NAME } from "./app-name";
import { background } from "./background";
import { BrandMark } from "./icons";
import { match } from "./paths";
import { here } from "./router";
import { NAV } from "./nav";
import { ROUTES } from "./routes";
import { SignInPage } from "../pages/signin";
import { UsageSummary } from "./usage-summary";

function currentRoute() {
  for (const route of ROUTES) {
    const params = match(route.pattern, here.value.pathname);
    if (params) return { route, params };
  }
  return null;
}

export function Shell() {
  const who = account.value;
  const found = currentRoute();
  useEffect(() => {
    if (found) document.title = `${found.route.title} · ${APP_NAME}`;
  }, [found?.route]);

  let page: ComponentChildren;
  if (who === undefined)
    page = offline.value ? (
      <section class="pad">
        <h1>Offline</h1>
        <p class="muted">The app opens as soon as the instance can be reached.</p>
      </section>
    ) : (
      <p class="muted pad">Loading…</p>
    );
  else if (who === null) page = <SignInPage />;
  else if (!found)
    page = (
      <section class="pad">
        <h1>Not found</h1>
        <p>
          There is no page at <code>{here.value.pathname}</code>. <a href="/">Your devices</a>
        </p>
      </section>
    );
  else page = found.route.page(found.params, here.value.searchParams);

  return (
    <>
      <header class="appbar">
        <a class="brand" href="/" aria-label={`${APP_NAME}: your devices`}>
          <BrandMark />
          <span>{APP_NAME}</span>
        </a>
        {who && (
          <nav aria-label="Main">
            {NAV.map((item) => (
              <a href={item.href} aria-current={here.value.pathname === item.href ? "page" : undefined}>
                {item.label}
              </a>
            ))}
          </nav>
        )}
        {who && (
          <div class="account">
            {usageReport.value && <UsageSummary report={usageReport.value} />}
            <span class="email" title={who.email}>
              {who.email}
            </span>
            <button type="button" class="link" onClick={() => background(leave())}>
              Sign out
            </button>
          </div>
        )}
      </header>
      {offline.value && (
        <p class="offline" role="status">
          You are offline. The app connects again by itself when the network is back.
        </p>
      )}
      <main id="app">{page}</main>
    </>
  );
}
