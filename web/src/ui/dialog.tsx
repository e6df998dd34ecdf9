// A modal built on <dialog>: the browser gives focus trapping, Escape to close and a backdrop.
import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import type { ApiFailure } from '../api';
import { ErrorNote } from './feedback';

export function Dialog({ title, onClose, children }: { title: string; onClose: () => void; children: ComponentChildren }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    return () => d?.close();
  }, []);
  return (
    <dialog ref={ref} aria-labelledby="dialog-title" onClose={onClose} onCancel={onClose}>
      <header class="dialog-head">
        <h2 id="dialog-title">{title}</h2>
        <button type="button" class="ghost" onClick={onClose} aria-label="Close">
          ✕
        </button>
      </header>
      <div class="dialog-body">{children}</div>
    </dialog>
  );
}

/** Asks before something that cannot be undone (delete, replay many). */
export function Confirm(props: {
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  danger?: boolean;
  busy?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  return (
    <Dialog title={props.title} onClose={props.onCancel}>
      <div>{props.children}</div>
      <div class="actions">
        <button type="button" onClick={props.onCancel} autoFocus>
          Cancel
        </button>
        <button type="button" class={props.danger ? 'danger' : 'primary'} disabled={props.busy} onClick={props.onConfirm}>
          {props.busy ? 'Working…' : props.confirmLabel}
        </button>
      </div>
    </Dialog>
  );
}

/** Asks before deleting: what goes away is said in children; the delete's own error shows in the dialog. */
export function ConfirmDelete(props: {
  title: string;
  children: ComponentChildren;
  /** the running delete (a useAction): its busy state and error */
  action: { busy: boolean; error?: ApiFailure };
  confirmLabel?: string;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  return (
    <Confirm title={props.title} confirmLabel={props.confirmLabel ?? 'Delete'} danger busy={props.action.busy} onConfirm={props.onConfirm} onCancel={props.onCancel}>
      {props.children}
      <ErrorNote error={props.action.error} />
    </Confirm>
  );
}
