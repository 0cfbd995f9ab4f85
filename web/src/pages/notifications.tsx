/**
 * Notifications for this browser, on the devices page once the person has a device: what push sends and when,
 * turning it on or off here, and which kinds of message this browser gets.
 */
import { useEffect, useState } from "preact/hooks";
import { background } from "../app/background";
import { ApiError } from "../app/http";
import {
  ALL_KINDS,
  browserSubscription,
  type Kinds,
  pushProblem,
  pushSupported,
  save,
  savedFor,
  subscribe,
  unsubscribe,
} from "../app/push";

const KINDS: readonly { kind: keyof Kinds; label: string }[] = [
  { kind: "cards", label: "Cards waiting for you" },
  { kind: "turn_end", label: "A long turn ended" },
  { kind: "link_down", label: "A device went offline mid-turn" },
];

export function NotificationsPanel() {
  const [subscription, setSubscription] = useState<PushSubscription | null>(null);
  const [kinds, setKinds] = useState<Kinds>(ALL_KINDS);
  const [off, setOff] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    if (!pushSupported()) return;
    background(
      (async () => {
        const current = await browserSubscription();
        const saved = await savedFor(current).catch(() => null);
        setSubscription(saved ? current : null);
        if (saved) setKinds({ cards: saved.cards, turn_end: saved.turn_end, link_down: saved.link_down });
      })(),
    );
  }, []);

  const run = async (work: () => Promise<void>) => {
    setBusy(true);
    setError("");
    try {
      await work();
    } catch (err) {
      if (err instanceof ApiError && err.status === 503) setOff(err.message);
      else setError(pushProblem(err));
    } finally {
      setBusy(false);
    }
  };
  const turnOn = () =>
    run(async () => {
      await subscribe(kinds);
      setSubscription(await browserSubscription());
    });
  const turnOff = () =>
    run(async () => {
      if (subscription) await unsubscribe(subscription);
      setSubscription(null);
    });
  const choose = (kind: keyof Kinds, on: boolean) => {
    const next = { ...kinds, [kind]: on };
    setKinds(next);
    if (!subscription) return;
    background(
      run(async () => {
        await save(subscription, next);
      }),
    );
  };

  return (
    <section class="card notifications" aria-labelledby="notifications-title">
      <h2 id="notifications-title">Notifications</h2>
      <p>
        When an approval, a question or a plan waits and no page of yours shows its chat, this browser can tell you — on
        a phone too — and you can answer it from the notification. It shows the device's name, the chat's title and the
        card's short text, and travels encrypted through this browser's push service.
      </p>
      {!pushSupported() ? (
        <p class="muted">
          This browser cannot receive push notifications (on an iPhone, add the app to the home screen).
        </p>
      ) : (
        <>
          <fieldset class="kinds">
            <legend>Tell me when</legend>
            {KINDS.map(({ kind, label }) => (
              <label key={kind}>
                <input
                  type="checkbox"
                  checked={kinds[kind]}
                  disabled={busy}
                  onChange={(e) => choose(kind, e.currentTarget.checked)}
                />
                {label}
              </label>
            ))}
          </fieldset>
          {off ? (
            <p class="muted">{off}</p>
          ) : (
            <div class="actions">
              {subscription ? (
                <button type="button" class="secondary" disabled={busy} onClick={() => background(turnOff())}>
                  Stop notifications on this browser
                </button>
              ) : (
                <button type="button" disabled={busy} onClick={() => background(turnOn())}>
                  Notify me on this browser
                </button>
              )}
            </div>
          )}
        </>
      )}
      <p class="error" role="alert">
        {error}
      </p>
    </section>
  );
}
