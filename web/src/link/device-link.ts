/**
 * The socket to the instance and the device's link behind it: whether the socket is open, and the device's status
 * as the instance last told it — its hello, its capabilities, its link up or down.
 */
import type * as acp from "@agentclientprotocol/sdk";
import { computed, signal } from "@preact/signals";
import type { InstanceStatus } from "../../../src/protocol/instance";
import type { ClientSocket } from "./client-socket";

export class DeviceLink {
  /** The socket to the instance is open. */
  readonly connected = signal(false);
  readonly status = signal<InstanceStatus | null>(null);
  readonly capabilities = computed(() => this.status.value?.capabilities ?? []);
  /** The socket is open and the device linked: what this page asks can reach the device. */
  readonly up = computed(() => this.connected.value && this.status.value?.link === "up");

  private agentCanLoad: boolean | null = null;

  constructor(private readonly socket: ClientSocket) {}

  has(capability: string): boolean {
    return this.capabilities.value.includes(capability);
  }

  opened(): void {
    this.connected.value = true;
  }

  closed(): void {
    this.connected.value = false;
  }

  /** The device's status, as the instance tells it on request. */
  setStatus(status: InstanceStatus): void {
    this.status.value = status;
  }

  /** The device's link dropped; the socket to the instance stays. */
  down(): void {
    if (this.status.value) this.status.value = { ...this.status.value, link: "down" };
  }

  /** Whether a plain ACP agent replays a session on session/load: asked once, with initialize. */
  async canLoadSessions(): Promise<boolean> {
    if (this.agentCanLoad === null) {
      const init = await this.socket.request<acp.InitializeResponse>("initialize", {}).catch(() => null);
      this.agentCanLoad = init?.agentCapabilities?.loadSession === true;
    }
    return this.agentCanLoad;
  }
}
