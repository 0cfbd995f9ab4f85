-- Chats (a device's sessions as people see them) and the deletes a device has not taken yet. Times are Unix
-- milliseconds. Both go with their device: revoking it deletes its rows.

-- Made by session/new answers (origin 'web') and _lembas/session/announce (origin 'terminal'); titles follow
-- title events. user_id is the device's owner, kept here so a person's list is one indexed read.
CREATE TABLE chats (
  device_id  TEXT NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
  session_id TEXT NOT NULL,
  user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  title      TEXT,
  cwd        TEXT NOT NULL,
  origin     TEXT NOT NULL CHECK (origin IN ('web', 'terminal')),
  model      TEXT,
  mode       TEXT,
  busy       INTEGER NOT NULL DEFAULT 0,
  left_at    INTEGER,                      -- when the terminal that shared it let go (_lembas/session/left)
  available  INTEGER NOT NULL DEFAULT 1,   -- the device can open it from its store at the next prompt
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (device_id, session_id)
);
CREATE INDEX chats_user_updated ON chats(user_id, updated_at DESC);

-- A chat a person deleted whose _lembas/session/delete the device has not answered: sent again after each link's
-- initialize until it is. After five refusals the instance stops ('given_up') and keeps the row as the record.
CREATE TABLE pending_deletes (
  device_id   TEXT NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
  session_id  TEXT NOT NULL,
  user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  refusals    INTEGER NOT NULL DEFAULT 0,
  last_error  TEXT,
  state       TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'given_up')),
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL,
  given_up_at INTEGER,
  PRIMARY KEY (device_id, session_id)
);
CREATE INDEX pending_deletes_device ON pending_deletes(device_id, state, created_at);
