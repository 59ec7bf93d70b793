/** The package's version, sent in the user-agent; test/offline.test.mjs keeps it equal to package.json's. */
export const VERSION = "0.1.0";
