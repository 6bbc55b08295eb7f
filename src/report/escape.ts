import { redact } from '../log.js';

/**
 * Every text the report shows goes through here. Values come from stores (rejected payloads, field paths,
 * examples, error messages) and are put in the page as text, never as markup: a `<script>` in a rejected
 * value shows as those characters. Registered secrets (src/log.ts) are masked first.
 */
export function esc(value: unknown): string {
  const text = value === null || value === undefined ? '' : redact(String(value));
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Thousands separated by a narrow no-break space, so columns of counts read at a glance and never wrap. */
export function count(value: number | null | undefined): string {
  if (value === null || value === undefined) return '';
  return Number.isInteger(value)
    ? String(value).replace(/\B(?=(\d{3})+(?!\d))/g, '\u202f')
    : value.toFixed(1);
}

/**
 * A size in bytes, by 1024s: `512 B`, `12.0 MB` (the report's sizes and the progress bars' bytes read);
 * `unknown` for null.
 */
export function bytes(value: number | null): string {
  if (value === null) return 'unknown';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let n = value;
  let unit = 0;
  while (n >= 1024 && unit < units.length - 1) {
    n /= 1024;
    unit++;
  }
  return unit === 0 ? `${n} B` : `${n.toFixed(1)} ${units[unit]}`;
}
