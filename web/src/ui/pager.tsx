// A list read newest first in pages: the first page, then "load older" appends the next one.
import { useRef, useState } from 'preact/hooks';
import type { ApiFailure } from '../api';
import { ErrorNote } from './feedback';
import { useAction } from './use-resource';

/** One page of rows, and the cursor of the next (older) page, or null at the end. */
export interface Page<T> {
  rows: T[];
  next: string | null;
}

/**
 * rows is null until the first page arrives; load.run(null) (re)reads the first page,
 * load.run(cursor) appends the page after it.
 */
export function usePager<T>(fetchPage: (cursor: string | null) => Promise<Page<T>>) {
  const [rows, setRows] = useState<T[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  // Only the latest read is shown: a filter changed while the previous read was in flight starts a
  // new one, and the older answer, should it arrive last, would put rows that do not match the
  // filter back on the page (the dashboard test saw the unfiltered list stay under "Delivered").
  const latest = useRef(0);
  const load = useAction(async (from: string | null) => {
    const ticket = ++latest.current;
    const page = await fetchPage(from);
    if (ticket !== latest.current) return;
    setRows((prev) => (from && prev ? [...prev, ...page.rows] : page.rows));
    setCursor(page.next);
  });
  return { rows, setRows, cursor, load };
}

/** Under the list: a failed later page's error, and the button for the next page while there is one. */
export function Pager({ pager, more }: { pager: { rows: unknown[] | null; cursor: string | null; load: { run: (cursor: string) => unknown; busy: boolean; error?: ApiFailure } }; more: string }) {
  const { rows, cursor, load } = pager;
  return (
    <>
      {rows && load.error && <ErrorNote error={load.error} />}
      {cursor && (
        <button type="button" onClick={() => load.run(cursor)} disabled={load.busy}>
          {load.busy ? 'Loading…' : more}
        </button>
      )}
    </>
  );
}
