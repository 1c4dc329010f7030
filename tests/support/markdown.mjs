// Reading the benchmark reports' Markdown back in tests.
import assert from 'node:assert/strict';

/** The rows of the Markdown table that follows the line `heading` (cells trimmed), header first. */
export function tableAfter(md, heading) {
  const at = md.indexOf(`\n${heading}\n`);
  assert.ok(at >= 0, `no "${heading}" in the report`);
  const lines = md.slice(at + heading.length + 2).split('\n');
  const start = lines.findIndex((l) => l.startsWith('|'));
  const rows = [];
  for (const line of lines.slice(start)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .slice(1, -1)
        .split('|')
        .map((c) => c.trim()),
    );
  }
  return [rows[0], ...rows.slice(2)]; // without the |---| line
}
