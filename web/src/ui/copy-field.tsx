// A read-only value with a Copy button: callback URLs, entity ids, signing secrets.
import { useRef, useState } from 'preact/hooks';

let counter = 0;

export function CopyField({ label, value, secret = false }: { label: string; value: string; secret?: boolean }) {
  const [id] = useState(() => `copy-${++counter}`);
  const [copied, setCopied] = useState(false);
  const input = useRef<HTMLInputElement>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
    } catch {
      // The async clipboard needs a secure context; over plain http on a LAN, select the text so
      // the owner can press Ctrl+C.
      input.current?.select();
      return;
    }
    setCopied(true);
    setTimeout(() => setCopied(false), 2000);
  };
  return (
    <div class="copy-field">
      <label for={id}>{label}</label>
      <div class="copy-row">
        <input id={id} ref={input} readOnly value={value} class={secret ? 'mono secret-value' : 'mono'} onFocus={(e) => e.currentTarget.select()} />
        <button type="button" onClick={copy} aria-label={`Copy ${label}`}>
          {copied ? 'Copied' : 'Copy'}
        </button>
      </div>
      <span class="sr-only" aria-live="polite">
        {copied ? `${label} copied to the clipboard` : ''}
      </span>
    </div>
  );
}
