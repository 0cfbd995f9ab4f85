-- Web Push subscriptions: a person's browsers that asked to be told when a card waits, a long turn ends or a
-- device's link drops mid-turn. One row per push endpoint (the browser's PushSubscription; a browser subscribing
-- again under another account moves it). p256dh and auth are the browser's keys, base64url; cards, turn_end and
-- link_down say which kinds of message the browser wants (1) or not (0). Times are Unix milliseconds.
CREATE TABLE push_subscriptions (
  endpoint   TEXT PRIMARY KEY,
  user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  p256dh     TEXT NOT NULL,
  auth       TEXT NOT NULL,
  cards      INTEGER NOT NULL DEFAULT 1,
  turn_end   INTEGER NOT NULL DEFAULT 1,
  link_down  INTEGER NOT NULL DEFAULT 1,
  created_at INTEGER NOT NULL
);
CREATE INDEX push_subscriptions_user ON push_subscriptions (user_id);
