// What a test sign-in found: what came back from the IdP, or which check failed and what to change.
// Every value is the IdP's and is rendered as text (escaped by Preact).
import { Notice } from '../ui/feedback';
import type { TestResult } from './types';

const show = (v: unknown) => (v == null ? '—' : Array.isArray(v) ? v.join(', ') : typeof v === 'object' ? JSON.stringify(v) : String(v));

export function TestResultView({ result }: { result: TestResult }) {
  const rows: [string, unknown][] = [
    ['Subject', result.subject],
    ['Email', result.email],
    ['Name', result.name],
    ['First name', result.first_name],
    ['Last name', result.last_name],
    ...Object.entries(result.extra ?? {}).map(([k, v]): [string, unknown] => [`${k} (mapped)`, v]),
  ];
  return (
    <div class={`test-result ${result.ok ? 'ok' : 'bad'}`} role={result.ok ? 'status' : 'alert'} aria-labelledby="test-title">
      <h3 id="test-title">{result.ok ? 'Test sign-in passed' : `Test sign-in failed: ${result.problem?.title ?? 'the answer did not validate'}`}</h3>
      {result.problem && (
        <>
          <p>
            <strong>What to change:</strong> {result.problem.fix}
          </p>
          <p class="small">
            Check: <code>{result.problem.check}</code> — {result.problem.detail}
          </p>
        </>
      )}
      {!result.current && <Notice kind="info">The settings changed after this test; test again before activating.</Notice>}
      {result.subject !== undefined && (
        <table aria-label="What the IdP sent">
          <tbody>
            {rows.map(([k, v]) => (
              <tr key={k}>
                <th scope="row">{k}</th>
                <td class="wrap">{show(v)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {result.attributes && Object.keys(result.attributes).length > 0 && (
        <details>
          <summary>All attributes and claims ({Object.keys(result.attributes).length})</summary>
          <table aria-label="All attributes">
            <tbody>
              {Object.entries(result.attributes).map(([k, v]) => (
                <tr key={k}>
                  <th scope="row" class="mono">
                    {k}
                  </th>
                  <td class="wrap">{show(v)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </details>
      )}
    </div>
  );
}
