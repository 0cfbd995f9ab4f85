/** /device: a person approves (or denies) the code their CLI printed. */
import { approveCode, denyCode, ApiError } from "../api.js";
import { background, formValues, h, replace } from "../dom.js";

export function approveView(root: Element, initialCode: string): void {
  const result = h("p", { role: "status" });
  const act = async (approve: boolean, form: HTMLFormElement) => {
    const code = (formValues(form).user_code ?? "").trim();
    result.className = "";
    try {
      if (approve) {
        const device = await approveCode(code);
        result.textContent = `Approved: ${device.name} is now linked to the account ${device.account.email}. You can close this page.`;
      } else {
        await denyCode(code);
        result.textContent = "Denied: the CLI will be told no.";
      }
      for (const button of form.querySelectorAll("button")) button.disabled = true;
    } catch (err) {
      result.className = "error";
      result.textContent = err instanceof ApiError ? err.message : String(err);
    }
  };
  const form: HTMLFormElement = h(
    "form",
    {
      class: "card narrow",
      onsubmit: (e: Event) => {
        e.preventDefault();
        background(act(true, form));
      },
    },
    h("h1", {}, "Link a device"),
    h("p", {}, "Check that this code is the one your terminal shows, then approve it."),
    h(
      "label",
      {},
      "Code",
      h("input", { name: "user_code", value: initialCode, required: true, autocomplete: "off", class: "code" }),
    ),
    h("button", { type: "submit" }, "Approve"),
    h("button", { type: "button", class: "secondary", onclick: () => background(act(false, form)) }, "Deny"),
    result,
  );
  replace(root, form);
}
