// Types of the package's JS API (js/index.js). SEED: the lead extends this.

/** The version of the ironic-wait build (the Rust crate's version). */
export function version(): string;
