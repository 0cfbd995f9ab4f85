import { describe, expect, it } from "vitest";
import { audioDurationMs } from "../../src/providers/audio-duration";
import { flacFile, m4aFile, mp3File, oggOpusFile, wavFile, webmOpusFile } from "../shared/audio-files";

describe("the audio's duration, read from its container", () => {
  it("reads each container a transcription takes", () => {
    expect(audioDurationMs(wavFile(2.5))).toBe(2500);
    expect(audioDurationMs(wavFile(1, 44100))).toBe(1000);
    expect(audioDurationMs(mp3File(250))).toBe(18_000); // 250 frames of 72 ms
    expect(audioDurationMs(flacFile(61.25))).toBe(61_250);
    expect(audioDurationMs(oggOpusFile(12))).toBe(12_000);
    expect(audioDurationMs(webmOpusFile(7.5))).toBe(7_500);
    expect(audioDurationMs(m4aFile(32))).toBe(32_000);
  });

  it("reads nothing from what is not one of them, or one that does not hold together", () => {
    expect(audioDurationMs(new Uint8Array(30_000))).toBeNull();
    expect(audioDurationMs(new TextEncoder().encode("not audio at all, only words"))).toBeNull();
    const mp3 = mp3File(10);
    mp3[mp3.length - 72 * 3] = 0x12; // a frame's sync broken: the frames no longer account for every byte
    expect(audioDurationMs(mp3)).toBeNull();
    expect(audioDurationMs(oggOpusFile(2).slice(0, 100))).toBeNull(); // a page cut short
  });

  it("counts Opus by its packets, not by what the last page claims", () => {
    const ogg = oggOpusFile(3);
    // Lower the last page's granule position to one second: the packets still play three.
    const last = ogg.lastIndexOf(0x4f, ogg.length - 1);
    const view = new DataView(ogg.buffer);
    for (let at = last; at >= 0; at--)
      if (ogg[at] === 0x4f && ogg[at + 1] === 0x67 && ogg[at + 2] === 0x67 && ogg[at + 3] === 0x53) {
        view.setUint32(at + 6, 48000, true);
        break;
      }
    expect(audioDurationMs(ogg)).toBe(3_000);
  });
});
