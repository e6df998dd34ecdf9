// The provider kinds the service speaks. A kind plugs in its field validation and protocol step
// (see ProviderKind); everything around it is shared. SAML registers itself here beside OIDC.
import { ApiError } from '../../errors.js';
import { oidcKind } from '../oidc/provider-kind.js';
import { samlKind } from '../saml/provider-kind.js';
import type { ProviderKind, ProviderKindName } from '../types.js';

export const kinds: Partial<Record<ProviderKindName, ProviderKind>> = {
  oidc: oidcKind,
  saml: samlKind,
};

export function kindOf(name: ProviderKindName): ProviderKind {
  const k = kinds[name];
  if (!k) throw new ApiError('validation_failed', `Providers of kind ${name} are not available.`);
  return k;
}

/** Fields that some kind owns; a body may carry only those of its own kind. */
export const kindFields = (): Set<string> => new Set(Object.values(kinds).flatMap((k) => k!.fields as string[]));
