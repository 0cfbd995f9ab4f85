/** Sign in; on a fresh instance, create the first (admin) account. */
import { ApiError, setup, signIn } from "../api.js";
import { background, formValues, h, replace } from "../dom.js";

export function signInView(root: Element, done: () => void): void {
  const error = h("p", { class: "error", role: "alert" });
  const run = async (firstAccount: boolean, form: HTMLFormElement) => {
    const { email = "", password = "" } = formValues(form);
    error.textContent = "";
    try {
      if (firstAccount) await setup(email, password);
      await signIn(email, password);
      done();
    } catch (err) {
      error.textContent = err instanceof ApiError ? err.message : String(err);
    }
  };
  const form = h(
    "form",
    {
      class: "card narrow",
      onsubmit: (e: Event) => {
        e.preventDefault();
        background(run(false, form));
      },
    },
    h("h1", {}, "Sign in"),
    h("label", {}, "Email", h("input", { name: "email", type: "email", required: true, autocomplete: "username" })),
    h(
      "label",
      {},
      "Password",
      h("input", {
        name: "password",
        type: "password",
        required: true,
        minlength: 8,
        autocomplete: "current-password",
      }),
    ),
    h("button", { type: "submit" }, "Sign in"),
    h(
      "button",
      { type: "button", class: "secondary", onclick: () => form.reportValidity() && background(run(true, form)) },
      "Create the first account",
    ),
    error,
  );
  replace(root, form);
}
