// Sign-in: offline a user name (the local API's identity); on AWS Cognito's hosted UI with PKCE.
// Tokens live in memory only (oidc-client-ts with an in-memory store), never in localStorage.
import { getConfig, setToken } from "./api.js";

let manager = null;

async function cognito() {
  if (manager) return manager;
  const { UserManager, WebStorageStateStore, InMemoryWebStorage } = await import("oidc-client-ts");
  const c = getConfig();
  const store = new WebStorageStateStore({ store: new InMemoryWebStorage() });
  manager = new UserManager({
    authority: c.authority, client_id: c.clientId, redirect_uri: c.redirectUri, response_type: "code",
    scope: "openid email", userStore: store, stateStore: new WebStorageStateStore({ store: window.sessionStorage }),
  });
  return manager;
}

export async function resume() {
  if (getConfig().mode !== "cognito") return null;
  const m = await cognito();
  if (location.search.includes("code=")) {
    const user = await m.signinRedirectCallback();
    history.replaceState(null, "", "/");
    setToken(user.id_token);
    return user.profile.email || user.profile.sub;
  }
  return null;
}

export async function signIn(userName) {
  if (getConfig().mode === "cognito") return (await cognito()).signinRedirect();
  setToken(`local:${userName}`);
  return userName;
}

// Sign-out forgets the token here; on AWS it also ends the hosted sign-in's session (Cognito's /logout endpoint,
// console-config.json logoutUrl), so the next sign-in asks again.
export async function signOut() {
  setToken(null);
  const c = getConfig();
  if (c.mode !== "cognito") return;
  await (await cognito()).removeUser();
  if (c.logoutUrl) location.assign(c.logoutUrl);
}
