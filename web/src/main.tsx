/** The web UI's entry: styles, the account, and the shell that routes by path. */
import "./styles/base.css";
import "./styles/layout.css";
import "@xterm/xterm/css/xterm.css";
import "./styles/chat.css";
import "./styles/notifications.css";
import "./styles/library.css";
import { render } from "preact";
import { refreshAccount } from "./app/account";
import { background } from "./app/background";
import { readPreloaded } from "./app/preloaded";
import { registerServiceWorker } from "./app/push";
import { Shell } from "./app/shell";

background(refreshAccount(readPreloaded()));
render(<Shell />, document.getElementById("root")!);
registerServiceWorker();
