/**
 * /device: a person approves (or denies) the code their CLI printed. The page first shows what is waiting — the
 * device as its CLI described itself, when it asked, and the account it will join — so a code planted by someone
 * else does not pass unnoticed. A code that came in the link (…/device?code=…) was not typed by the person, so
 * approving it also takes an explicit "I started this".
 */
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { background } from "../app/background";
import { ago } from "../app/format";
import { approveCode, denyCode, lookupCode, messageOf, type WaitingLogin } from "../app/http";

export function ApprovePage({ code: codeInLink }: { code: string }) {
  const [code, setCode] = useState(codeInLink);
  const [waiting, setWaiting] = useState<WaitingLogin | null>(null);
  const [confirmed, setConfirmed] = useState(false);
  const [library, setLibrary] = useState(false);
  const [result, setResult] = useState<{ text: string; error: boolean } | null>(null);
  const [done, setDone] = useState(false);
  const fromLink = codeInLink !== "" && code === codeInLink;

  const look = async (userCode: string) => {
    setResult(null);
    setWaiting(null);
    try {
      setWaiting(await lookupCode(userCode.trim()));
    } catch (err) {
      setResult({ text: messageOf(err), error: true });
    }
  };
  useEffect(() => {
    if (codeInLink) background(look(codeInLink));
  }, [codeInLink]);

  const act = async (approve: boolean) => {
    setResult(null);
    try {
      if (approve) {
        const device = await approveCode(code.trim(), library);
        setResult({
          text: `Approved: ${device.name} is now linked to the account ${device.account.email}. You can close this page.`,
          error: false,
        });
      } else {
        await denyCode(code.trim());
        setResult({ text: "Denied: the CLI will be told no.", error: false });
      }
      setDone(true);
    } catch (err) {
      setResult({ text: messageOf(err), error: true });
    }
  };

  return (
    <form
      class="card narrow"
      onSubmit={(e) => {
        e.preventDefault();
        background(waiting ? act(true) : look(code));
      }}
    >
      <h1>Link a device</h1>
      <p>Check that this code is the one your terminal shows, and that you started this login yourself.</p>
      <label>
        Code
        <input
          name="user_code"
          value={code}
          onInput={(e) => {
            setCode(e.currentTarget.value);
            setWaiting(null);
          }}
          required
          autocomplete="off"
          autocapitalize="characters"
          class="code"
          disabled={done}
        />
      </label>
      {waiting && (
        <section class="waiting-login" aria-label="The login waiting for this code">
          <p>
            <strong>{waiting.name}</strong> asks to join the account <strong>{waiting.account.email}</strong>.
          </p>
          <dl>
            <dt>Host</dt>
            <dd>{waiting.host ?? "not given"}</dd>
            <dt>Platform</dt>
            <dd>{waiting.platform ?? "not given"}</dd>
            <dt>Asked</dt>
            <dd>{ago(Date.now() - waiting.requested_seconds_ago * 1000)}</dd>
          </dl>
          <Check name="library" checked={library} set={setLibrary} disabled={done}>
            It may use my library (search my documents and add to them)
          </Check>
          {fromLink && (
            <Check name="started_here" checked={confirmed} set={setConfirmed} disabled={done}>
              I started this login myself, on {waiting.host ?? "that device"}
            </Check>
          )}
        </section>
      )}
      {waiting ? (
        <>
          <button type="submit" disabled={done || (fromLink && !confirmed)}>
            Approve
          </button>
          <button type="button" class="secondary" disabled={done} onClick={() => background(act(false))}>
            Deny
          </button>
        </>
      ) : (
        <button type="submit" disabled={done}>
          Look up
        </button>
      )}
      <p role="status" class={result?.error ? "error" : ""}>
        {result?.text}
      </p>
    </form>
  );
}

function Check(props: {
  name: string;
  checked: boolean;
  set: (checked: boolean) => void;
  disabled: boolean;
  children: ComponentChildren;
}) {
  return (
    <label class="check">
      <input
        type="checkbox"
        name={props.name}
        checked={props.checked}
        onChange={(e) => props.set(e.currentTarget.checked)}
        disabled={props.disabled}
      />
      {props.children}
    </label>
  );
}
