// Labelled inputs: every control has a <label>, hints are tied with aria-describedby.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';

let counter = 0;
const useId = (prefix: string) => useState(() => `${prefix}-${++counter}`)[0];

interface FieldProps {
  label: string;
  value: string;
  onInput: (v: string) => void;
  hint?: ComponentChildren;
  type?: 'text' | 'password' | 'email' | 'url' | 'number' | 'datetime-local';
  required?: boolean;
  placeholder?: string;
  name?: string;
  autoComplete?: string;
  mono?: boolean;
  min?: number;
  max?: number;
}

/** The hint under a control, tied to it by aria-describedby={hintOf(id, hint)}. */
const hintOf = (id: string, hint?: ComponentChildren) => (hint ? `${id}-hint` : undefined);
function Hint({ id, hint }: { id: string; hint?: ComponentChildren }) {
  return hint ? (
    <p class="hint" id={`${id}-hint`}>
      {hint}
    </p>
  ) : null;
}

/** A control under its label (with * when required), its hint below. */
function Labelled({ id, label, required, hint, children }: { id: string; label: string; required?: boolean; hint?: ComponentChildren; children: ComponentChildren }) {
  return (
    <div class="field">
      <label for={id}>
        {label}
        {required && <span aria-hidden="true"> *</span>}
      </label>
      {children}
      <Hint id={id} hint={hint} />
    </div>
  );
}

export function Field(p: FieldProps) {
  const id = useId('f');
  return (
    <Labelled id={id} label={p.label} required={p.required} hint={p.hint}>
      <input
        id={id}
        name={p.name}
        // preact's typings pair each input type with its ARIA roles; every type we pass is a plain input
        type={(p.type ?? 'text') as 'text'}
        value={p.value}
        required={p.required}
        placeholder={p.placeholder}
        autoComplete={p.autoComplete ?? 'off'}
        spellcheck={false}
        class={p.mono ? 'mono' : undefined}
        min={p.min}
        max={p.max}
        aria-describedby={hintOf(id, p.hint)}
        onInput={(e) => p.onInput(e.currentTarget.value)}
      />
    </Labelled>
  );
}

export function TextArea(p: Omit<FieldProps, 'type'> & { rows?: number }) {
  const id = useId('t');
  return (
    <Labelled id={id} label={p.label} required={p.required} hint={p.hint}>
      <textarea
        id={id}
        name={p.name}
        rows={p.rows ?? 4}
        value={p.value}
        required={p.required}
        placeholder={p.placeholder}
        spellcheck={false}
        class={p.mono ? 'mono' : undefined}
        aria-describedby={hintOf(id, p.hint)}
        onInput={(e) => p.onInput(e.currentTarget.value)}
      />
    </Labelled>
  );
}

export function Check({ label, checked, onChange, hint }: { label: string; checked: boolean; onChange: (v: boolean) => void; hint?: string }) {
  const id = useId('c');
  return (
    <div class="check">
      <input id={id} type="checkbox" checked={checked} onChange={(e) => onChange(e.currentTarget.checked)} aria-describedby={hintOf(id, hint)} />
      <label for={id}>{label}</label>
      <Hint id={id} hint={hint} />
    </div>
  );
}

export function Select<T extends string>({ label, value, options, onChange, hint }: { label: string; value: T; options: [T, string][]; onChange: (v: T) => void; hint?: ComponentChildren }) {
  const id = useId('s');
  return (
    <Labelled id={id} label={label} hint={hint}>
      <select id={id} value={value} onChange={(e) => onChange(e.currentTarget.value as T)} aria-describedby={hintOf(id, hint)}>
        {options.map(([v, text]) => (
          <option key={v} value={v}>
            {text}
          </option>
        ))}
      </select>
    </Labelled>
  );
}

/** "a.com, b.com" or one per line → ["a.com", "b.com"] */
export const splitList = (s: string) =>
  s
    .split(/[\s,]+/)
    .map((x) => x.trim())
    .filter(Boolean);

/** "Name: value" lines ↔ a headers object. */
export function parseHeaders(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const i = line.indexOf(':');
    if (i <= 0) throw new Error(`Header line "${line.trim()}" needs the form "Name: value".`);
    out[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return out;
}
export const formatHeaders = (h: Record<string, string> = {}) =>
  Object.entries(h)
    .map(([k, v]) => `${k}: ${v}`)
    .join('\n');
