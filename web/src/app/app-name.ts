/**
 * The app's name, in the header and in every page's title. A module of its own because pages use it and the shell,
 * which shows them, imports them through the router: kept in the shell, it made an import circle.
 */
export const APP_NAME = "lembas-edge";
