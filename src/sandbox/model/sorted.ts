/** Lists kept sorted by ascending id (the pagination order): lookups by binary search. */
export function indexOfId(items: readonly { id: number }[], id: number): number {
  let lo = 0;
  let hi = items.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const midId = items[mid]!.id;
    if (midId === id) return mid;
    if (midId < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}
