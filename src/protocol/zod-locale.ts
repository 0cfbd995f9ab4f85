/**
 * zod/mini ships no messages: without a locale every refusal would read "Invalid input". English is configured
 * once, here, and only English, so no other locale reaches the Worker bundle. The Worker's entry imports this
 * first; issues.ts imports it too, so every module that turns issues into sentences has it.
 */
import * as z from "zod/mini";
import en from "zod/v4/locales/en.js";

z.config(en());
