/** The two small forms a list row or a header opens in place: a new name, and a confirmation of a destructive act. */
import type { ComponentChildren } from "preact";

export function RenameForm(props: {
  label: ComponentChildren;
  value: string;
  maxLength: number;
  onSave: (value: string) => void;
  onCancel: () => void;
}) {
  return (
    <form
      class="inline-form"
      onSubmit={(e) => {
        e.preventDefault();
        const value = String(new FormData(e.currentTarget).get("value") ?? "").trim();
        if (value) props.onSave(value);
      }}
    >
      <label>
        {props.label}
        <input name="value" defaultValue={props.value} required maxLength={props.maxLength} />
      </label>
      <button type="submit">Save</button>
      <button type="button" class="secondary" onClick={props.onCancel}>
        Cancel
      </button>
    </form>
  );
}

export function Confirm(props: {
  legend: string;
  children: ComponentChildren;
  action: string;
  keep: string;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  return (
    <fieldset class="confirm">
      <legend class="visually-hidden">{props.legend}</legend>
      <p>{props.children}</p>
      <button type="button" class="danger" onClick={props.onConfirm}>
        {props.action}
      </button>
      <button type="button" class="secondary" onClick={props.onCancel}>
        {props.keep}
      </button>
    </fieldset>
  );
}
