// Charts drawn as SVG by hand: stacked areas over time, for the fleet by
// provision state and for each wait by outcome. Why not a charting library:
// the console has no build step and serves only www/ and pkg/, so a library
// would be vendored here and kept up to date by hand; the two charts need a
// path per series and three axis labels, about 100 lines. Under the page's
// CSP (no inline styles) the look is classes in console.css; the elements
// are made with createElementNS and attributes, never from markup, and the
// only text in them (state names, in <title>) is set as text.

import { stateKind } from './states.js';

const NS = 'http://www.w3.org/2000/svg';
const M = { left: 44, right: 6, top: 6, bottom: 18 };

function svg(tag, attrs = {}, text) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

// Stable states at the bottom (the common ones first), the moving ones above
// them, then held, failures on top.
const ORDER = ['active', 'available', 'manageable', 'enroll', 'rescue'];
const KIND_ORDER = { working: 10, hold: 20, failed: 30 };
/** Where a provision state goes in a stack (and in lists of counts). */
export function stateOrder(state) {
  const kind = stateKind(state);
  if (kind in KIND_ORDER) return KIND_ORDER[kind];
  const i = ORDER.indexOf(state);
  return i === -1 ? ORDER.length : i;
}

const round = (n) => Math.round(n * 10) / 10;

/**
 * Draws stacked areas into `el` (an <svg>): `points` [{ t, values: { key: n } }]
 * in time order; each key a path of class `classOf(key)`, stacked by `order`.
 */
export function drawStacked(el, { points, classOf, order = () => 0, xLabel, label }) {
  // Drawn at the size it shows at, so that its text is not stretched.
  const W = Math.max(200, Math.round(el.clientWidth || 600));
  const H = Math.max(80, Math.round(el.clientHeight || 150));
  el.setAttribute('viewBox', `0 0 ${W} ${H}`);
  el.setAttribute('role', 'img');
  el.setAttribute('aria-label', label);
  const keys = [...new Set(points.flatMap((p) => Object.keys(p.values)))].sort((a, b) => order(a) - order(b) || (a < b ? -1 : 1));
  const children = [svg('title', {}, label)];
  const plotW = W - M.left - M.right;
  const plotH = H - M.top - M.bottom;
  if (points.length === 0) {
    children.push(svg('text', { x: W / 2, y: H / 2, class: 'chart-empty', 'text-anchor': 'middle' }, 'No data yet'));
    el.replaceChildren(...children);
    el.dataset.points = '0';
    return;
  }
  const t0 = points[0].t;
  const t1 = points.at(-1).t;
  const span = t1 - t0 || 1;
  const totals = points.map((p) => keys.reduce((sum, k) => sum + (p.values[k] ?? 0), 0));
  const max = Math.max(1, ...totals);
  const x = (t) => round(M.left + (points.length === 1 ? plotW : ((t - t0) / span) * plotW));
  const y = (v) => round(M.top + plotH - (v / max) * plotH);

  for (const frac of [0, 0.5, 1]) {
    const v = Math.round(max * frac);
    children.push(svg('line', { x1: M.left, x2: W - M.right, y1: y(v), y2: y(v), class: 'chart-grid' }));
    children.push(svg('text', { x: M.left - 4, y: y(v) + 4, 'text-anchor': 'end', class: 'chart-tick' }, v.toLocaleString('en')));
  }
  // One point: a bar of the chart's width, so that a start shows something.
  const xs = points.length === 1 ? [M.left, W - M.right] : points.map((p) => x(p.t));
  const at = (i) => (points.length === 1 ? points[0] : points[i]);
  const base = xs.map(() => 0);
  for (const k of keys) {
    const top = base.map((b, i) => b + (at(i).values[k] ?? 0));
    const upper = xs.map((px, i) => `${px},${y(top[i])}`);
    const lower = xs.map((px, i) => `${px},${y(base[i])}`).reverse();
    const path = svg('path', { d: `M${upper.join('L')}L${lower.join('L')}Z`, class: `area ${classOf(k)}`, 'data-key': k });
    path.append(svg('title', {}, `${k}: ${(at(xs.length - 1).values[k] ?? 0).toLocaleString('en')}`));
    children.push(path);
    top.forEach((v, i) => {
      base[i] = v;
    });
  }
  children.push(svg('text', { x: M.left, y: H - 4, class: 'chart-tick' }, xLabel(t0, t1)));
  children.push(svg('text', { x: W - M.right, y: H - 4, 'text-anchor': 'end', class: 'chart-tick' }, xLabel(t1, t1)));
  el.replaceChildren(...children);
  el.dataset.points = String(points.length);
}

/** A legend: [name, count, class] as list items with a swatch. */
export function legend(list, entries) {
  list.replaceChildren(
    ...entries.map(([name, count, cls]) => {
      const li = document.createElement('li');
      const swatch = document.createElement('span');
      swatch.className = `swatch ${cls}`;
      const strong = document.createElement('strong');
      strong.textContent = Number(count ?? 0).toLocaleString('en');
      li.append(swatch, `${name} `, strong);
      li.dataset.key = name;
      return li;
    }),
  );
}
