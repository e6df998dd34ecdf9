// Where the client keeps the PKCE verifier between signInWithSSO and exchangeCodeForSession. In a
// browser the page navigates away to the IdP in between, so pass a persistent storage there
// (localStorage or sessionStorage fit this interface); the default memory storage suits servers and
// tests where both calls happen in one process.
export interface VerifierStorage {
  getItem(key: string): string | null | Promise<string | null>;
  setItem(key: string, value: string): void | Promise<void>;
  removeItem(key: string): void | Promise<void>;
}

export function memoryStorage(): VerifierStorage {
  const items = new Map<string, string>();
  return {
    getItem: (key) => items.get(key) ?? null,
    setItem: (key, value) => void items.set(key, value),
    removeItem: (key) => void items.delete(key),
  };
}
