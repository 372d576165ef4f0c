// Number and time formats shared by the pages. Quantities arrive from the API in milli-units
// (GPUs, cpu) or bytes (memory), as the scheduler counts them.

export function gpus(milli) {
  if (milli === null || milli === undefined) return '–';
  const value = milli / 1000;
  return Number.isInteger(value) ? String(value) : value.toFixed(2);
}

export function amount(resource, value) {
  if (value === null || value === undefined) return '–';
  if (value === -1) return '∞';
  if (resource === 'memory') return bytes(value);
  if (resource === 'cpu') return cores(value);
  return gpus(value);
}

export function cores(milli) {
  if (milli === null || milli === undefined) return '–';
  const value = milli / 1000;
  return Number.isInteger(value) ? String(value) : value.toFixed(1);
}

export function bytes(n) {
  if (n === null || n === undefined) return '–';
  const units = ['B', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi'];
  let value = n;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${Number.isInteger(value) ? value : value.toFixed(1)}${units[unit]}`;
}

export function percent(ratio) {
  if (ratio === null || ratio === undefined) return '–';
  return `${Math.round(ratio * 100)} %`;
}

export function time(ms) {
  if (!ms) return '–';
  return new Date(ms).toLocaleString(undefined, { hour12: false });
}

export function clock(ms) {
  if (!ms) return '–';
  return new Date(ms).toLocaleTimeString(undefined, { hour12: false });
}

export function duration(seconds) {
  if (seconds === null || seconds === undefined) return '–';
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = s % 60;
  if (h > 0) return `${h}h${String(m).padStart(2, '0')}m`;
  if (m > 0) return `${m}m${String(rest).padStart(2, '0')}s`;
  return `${rest}s`;
}

export function since(ms, now) {
  if (!ms) return '–';
  return duration(((now || Date.now()) - ms) / 1000);
}

// A usage bar (UsageMeter, and the Nodes page's table, which draws its 300 bars without a component
// each): the share of the bar's fill, in %, of max(capacity, used, 1).
export function usageMax(used, capacity) {
  return Math.max(capacity, used, 1);
}

export function usageFill(used, capacity) {
  return { backgroundSize: `${((100 * Math.max(used, 0)) / usageMax(used, capacity)).toFixed(1)}% 100%` };
}

// Nearly full (over 90 % of capacity) or over it, as the native <meter> marked it.
export function usageHigh(used, capacity) {
  return used > (capacity * 0.9 || 1);
}
