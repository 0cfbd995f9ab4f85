/**
 * The offer of notifications where they matter: the first time a card waits while the page is open, if this
 * browser can have them and has none set up, it is offered right there — once; "Not now" is remembered.
 */
import { useEffect, useState } from "preact/hooks";
import { background } from "../app/background";
import { ALL_KINDS, pushOfferable, pushProblem, subscribe } from "../app/push";

const DECLINED = "push-offer-declined";

export function PushOffer({ waiting }: { waiting: boolean }) {
  const [shown, setShown] = useState(false);
  const [asked, setAsked] = useState(false);
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState("");
  const [done, setDone] = useState(false);

  useEffect(() => {
    if (!waiting || asked || localStorage.getItem(DECLINED)) return;
    setAsked(true);
    background(pushOfferable().then(setShown, () => setShown(false)));
  }, [waiting, asked]);

  if (!shown) return null;
  const turnOn = async () => {
    setBusy(true);
    setProblem("");
    try {
      await subscribe(ALL_KINDS);
      setDone(true);
    } catch (err) {
      setProblem(pushProblem(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="push-offer" aria-label="Notifications">
      {done ? (
        <p role="status">Notifications are on: this browser is told when your agent needs you.</p>
      ) : (
        <>
          <p>Get a notification when your agent needs you.</p>
          <div class="actions">
            <button type="button" disabled={busy} onClick={() => background(turnOn())}>
              Turn on
            </button>
            <button
              type="button"
              class="secondary"
              onClick={() => {
                localStorage.setItem(DECLINED, "1");
                setShown(false);
              }}
            >
              Not now
            </button>
          </div>
          <p class="error" role="alert">
            {problem}
          </p>
        </>
      )}
    </section>
  );
}
