/**
 * Sign in; on a fresh instance (no account yet) the page is the first account's making instead, its password
 * typed twice.
 */
import { useEffect, useState } from "preact/hooks";
import { refreshAccount } from "../app/account";
import { background } from "../app/background";
import { messageOf, setup, setupOpen, signIn } from "../app/http";

export function SignInPage() {
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  /** null until the instance says whether it has an account. */
  const [firstRun, setFirstRun] = useState<boolean | null>(null);

  useEffect(() => {
    background(setupOpen().then(setFirstRun, () => setFirstRun(false)));
  }, []);

  const run = async (form: HTMLFormElement) => {
    const data = new FormData(form);
    const email = String(data.get("email") ?? "");
    const password = String(data.get("password") ?? "");
    if (firstRun && password !== data.get("confirm")) {
      setError("The two passwords differ: type the same password twice.");
      return;
    }
    setError("");
    setBusy(true);
    try {
      if (firstRun) await setup(email, password);
      await signIn(email, password);
      await refreshAccount();
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };

  if (firstRun === null) return <p class="muted pad">Loading…</p>;
  return (
    <form
      class="card narrow"
      onSubmit={(e) => {
        e.preventDefault();
        background(run(e.currentTarget));
      }}
    >
      <h1>{firstRun ? "Create the first account" : "Sign in"}</h1>
      {firstRun && <p class="muted">This instance has no account yet. The first one is its admin.</p>}
      <label>
        Email
        <input name="email" type="email" required autocomplete="username" />
      </label>
      <label>
        Password
        <input
          name="password"
          type="password"
          required
          minLength={8}
          autocomplete={firstRun ? "new-password" : "current-password"}
        />
      </label>
      {firstRun && (
        <label>
          Password again
          <input name="confirm" type="password" required minLength={8} autocomplete="new-password" />
        </label>
      )}
      <button type="submit" disabled={busy}>
        {firstRun ? "Create the account" : "Sign in"}
      </button>
      <p class="error" role="alert">
        {error}
      </p>
    </form>
  );
}
