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

export function Field(p: FieldProps) {
  const id = useId('f');
  return (
    <div class="field">
      <label for={id}>
        {p.label}
        {p.required && <span aria-hidden="true"> *</span>}
      </label>
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
        aria-describedby={p.hint ? `${id}-hint` : undefined}
        onInput={(e) => p.onInput(e.currentTarget.value)}
      />
      {p.hint && (
        <p class="hint" id={`${id}-hint`}>
          {p.hint}
        </p>
      )}
    </div>
  );
}

export function TextArea(p: Omit<FieldProps, 'type'> & { rows?: number }) {
  const id = useId('t');
  return (
    <div class="field">
      <label for={id}>
        {p.label}
        {p.required && <span aria-hidden="true"> *</span>}
      </label>
      <textarea
        id={id}
        name={p.name}
        rows={p.rows ?? 4}
        value={p.value}
        required={p.required}
        placeholder={p.placeholder}
        spellcheck={false}
        class={p.mono ? 'mono' : undefined}
        aria-describedby={p.hint ? `${id}-hint` : undefined}
        onInput={(e) => p.onInput(e.currentTarget.value)}
      />
      {p.hint && (
        <p class="hint" id={`${id}-hint`}>
          {p.hint}
        </p>
      )}
    </div>
  );
}

export function Check({ label, checked, onChange, hint }: { label: string; checked: boolean; onChange: (v: boolean) => void; hint?: string }) {
  const id = useId('c');
  return (
    <div class="check">
      <input id={id} type="checkbox" checked={checked} onChange={(e) => onChange(e.currentTarget.checked)} aria-describedby={hint ? `${id}-hint` : undefined} />
      <label for={id}>{label}</label>
      {hint && (
        <p class="hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
    </div>
  );
}

export function Select<T extends string>({ label, value, options, onChange }: { label: string; value: T; options: [T, string][]; onChange: (v: T) => void }) {
  const id = useId('s');
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <select id={id} value={value} onChange={(e) => onChange(e.currentTarget.value as T)}>
        {options.map(([v, text]) => (
          <option key={v} value={v}>
            {text}
          </option>
        ))}
      </select>
    </div>
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
