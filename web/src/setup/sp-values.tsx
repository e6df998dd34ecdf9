// Step 1 of the setup page: what the IT admin enters at their IdP, each with a Copy button.
import { CopyField } from '../ui/copy-field';
import type { OidcSide, SamlSide } from './types';

export function SpValues({ kind, saml, oidc }: { kind: 'saml' | 'oidc'; saml: SamlSide | null; oidc: OidcSide | null }) {
  return (
    <section class="panel" aria-labelledby="step-sp">
      <h2 id="step-sp">1. Enter these values at your IdP</h2>
      {kind === 'saml' && saml && (
        <>
          <p>Create a SAML 2.0 application. Most IdPs can import our metadata from its URL; otherwise copy the values one by one.</p>
          <CopyField label="SP metadata URL" value={saml.sp_metadata_url} />
          <CopyField label="SP entity ID (Audience URI, Identifier)" value={saml.sp_entity_id} />
          <CopyField label="ACS URL (Single sign-on URL, Reply URL)" value={saml.acs_url} />
          <CopyField label="NameID format" value={saml.nameid_format} />
          <p>Set the NameID to the user's email address, sign the assertion (RSA-SHA256), and do not encrypt it. These attributes are read:</p>
          <table aria-label="Attributes read from the assertion">
            <thead>
              <tr>
                <th>User field</th>
                <th>Attribute name</th>
              </tr>
            </thead>
            <tbody>
              {saml.attributes.map((a) => (
                <tr key={a.field}>
                  <td>{a.field}</td>
                  <td>
                    <code>{a.attribute}</code> {a.note && <span class="hint">({a.note})</span>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
      {kind === 'oidc' && oidc && (
        <>
          <p>Create a confidential web application (authorization code flow, client authentication by secret).</p>
          <CopyField label="Redirect URI" value={oidc.redirect_uri} />
          <CopyField label="Scopes" value={oidc.scopes.join(' ')} />
        </>
      )}
    </section>
  );
}
