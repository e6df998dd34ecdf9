// Loads one API resource for a view, with the states every view shows: loading, error, data.
import { useCallback, useEffect, useState } from 'preact/hooks';
import { api, ApiFailure } from '../api';

export interface Resource<T> {
  data?: T;
  error?: ApiFailure;
  loading: boolean;
  reload: () => void;
}

export function useResource<T>(path: string | null): Resource<T> {
  const [state, setState] = useState<{ data?: T; error?: ApiFailure; loading: boolean }>({ loading: !!path });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (!path) return;
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    api<T>('GET', path).then(
      (data) => live && setState({ data, loading: false }),
      (error: ApiFailure) => live && setState({ error, loading: false }),
    );
    return () => {
      live = false;
    };
  }, [path, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

/** Runs an action (a form submit, a button) with busy and error states. */
export function useAction<A extends unknown[], R>(fn: (...args: A) => Promise<R>) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiFailure | undefined>();
  const run = useCallback(
    async (...args: A): Promise<R | undefined> => {
      setBusy(true);
      setError(undefined);
      try {
        return await fn(...args);
      } catch (e) {
        setError(e instanceof ApiFailure ? e : new ApiFailure(0, 'client_error', String((e as Error)?.message ?? e)));
        return undefined;
      } finally {
        setBusy(false);
      }
    },
    [fn],
  );
  return { run, busy, error, clearError: () => setError(undefined) };
}
