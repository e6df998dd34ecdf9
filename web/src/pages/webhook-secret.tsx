// The signing secret, shown exactly once (on creation and after a rotation): the API never
// returns it again, so the page says so plainly and keeps it until the owner dismisses it.
import { useEffect, useRef } from 'preact/hooks';
import { CopyField } from '../ui/copy-field';
import { when } from '../ui/feedback';

export function OneTimeSecret(props: { name: string; value: string; rotated: boolean; previousUntil?: string | null; onDone: () => void }) {
  const { name, value, rotated, previousUntil, onDone } = props;
  const box = useRef<HTMLElement>(null);
  useEffect(() => box.current?.focus(), []);
  return (
    <section class="one-time" ref={box} tabIndex={-1} aria-labelledby="one-time-title" data-testid="signing-secret">
      <h2 id="one-time-title">{rotated ? 'New signing secret' : 'Webhook created'}: copy the signing secret now</h2>
      <p>
        <strong>This is the only time it is shown.</strong> Store it where your receiver can read it; it verifies the{' '}
        <code>webhook-signature</code> header of every request from <strong>{name}</strong>. If you lose it, rotate it to get a new one.
      </p>
      {rotated && previousUntil && (
        <p>Until {when(previousUntil)} requests carry signatures with both the previous and the new secret, so receivers can switch over without losing any.</p>
      )}
      <CopyField label="Signing secret" value={value} secret />
      <button type="button" class="primary" onClick={onDone}>
        I have stored it
      </button>
    </section>
  );
}
