/** Sign in; on a fresh instance, create the first (admin) account. */
import { useState } from "preact/hooks";
import { refreshAccount } from "../app/account";
import { background } from "../app/background";
import { messageOf, setup, signIn } from "../app/http";

export function SignInPage() {
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);

  const run = async (form: HTMLFormElement, firstAccount: boolean) => {
    const data = new FormData(form);
    const email = String(data.get("email") ?? "");
    const password = String(data.get("password") ?? "");
    setError("");
    setBusy(true);
    try {
      if (firstAccount) await setup(email, password);
      await signIn(email, password);
      await refreshAccount();
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form
      class="card narrow"
      onSubmit={(e) => {
        e.preventDefault();
        background(run(e.currentTarget, false));
      }}
    >
      <h1>Sign in</h1>
      <label>
        Email
        <input name="email" type="email" required autocomplete="username" />
      </label>
      <label>
        Password
        <input name="password" type="password" required minLength={8} autocomplete="current-password" />
      </label>
      <button type="submit" disabled={busy}>
        Sign in
      </button>
      <button
        type="button"
        class="secondary"
        disabled={busy}
        onClick={(e) => {
          const form = e.currentTarget.form!;
          if (form.reportValidity()) background(run(form, true));
        }}
      >
        Create the first account
      </button>
      <p class="error" role="alert">
        {error}
      </p>
    </form>
  );
}
