// DOM helpers. Server text (names, states, last_error) only ever enters the
// page as text nodes: `el` has no way to set HTML.

/**
 * A new element. `attrs`: `text` (textContent), `class`, `on<event>`
 * handlers, anything else as an attribute (skipped when null or false).
 */
export function el(tag, attrs = {}, children = []) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v == null || v === false) continue;
    if (k === 'text') e.textContent = v;
    else if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  e.append(...children);
  return e;
}

/** Sets textContent only when it changes (keeps selections and screen readers calm). */
export function setText(e, text) {
  const t = text == null ? '' : String(text);
  if (e.textContent !== t) e.textContent = t;
}

export const byId = (id) => document.getElementById(id);

/** The first 8 characters of a UUID, as `openstack baremetal` users read them. */
export const shortId = (uuid) => (uuid ? String(uuid).slice(0, 8) : '');

/** Seconds as `4.2 s` or `2 min 05 s`. */
export function seconds(s) {
  if (s == null || !Number.isFinite(s)) return '';
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${String(Math.floor(s % 60)).padStart(2, '0')} s`;
}

/** A badge for a provision state (or outcome), coloured by its kind. */
export function badge(text, kind) {
  return el('span', { class: `badge badge-${kind}`, text: text ?? '—' });
}
