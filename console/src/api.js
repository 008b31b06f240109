// The API client: same origin (/api/v1), bearer token in memory; errors become sentences.
let token = null;
let config = { mode: "local" };

export function setToken(value) { token = value; }
export function signedIn() { return token !== null; }
export function bearer() { return `Bearer ${token}`; }
export function setConfig(value) { config = value; }
export function getConfig() { return config; }

// Offline the presigned S3 URLs point at the emulator's port: the console server proxies them same-origin.
export function s3Url(url) {
  const proxy = config.s3Proxy;
  return proxy && url.startsWith(proxy.origin) ? proxy.path + url.slice(proxy.origin.length) : url;
}

const SENTENCES = {
  402: "Your budget for this month does not cover this conversion",
  429: "A limit was reached; wait a little and try again",
  409: "That cannot be done in the job's current state",
  401: "Your sign-in has expired; sign in again",
};

// An error answer is {"error": {"code", "message"}} (decision 0031).
export class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    const base = SENTENCES[status] || (status >= 500 ? "The service had a problem; try again in a minute" : "The request was refused");
    super(error.message ? `${base}: ${error.message}` : `${base}.`);
    this.status = status;
    this.code = error.code;
  }
}

export async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${token}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

// A dry run is an estimate the API answers 202 for; its worker reads the files. Poll it, telling onProgress
// what it is doing, until it is answered: the dry run's answer, or an ApiError with the id it failed with.
export function progressWords(p) {
  if (!p || !p.step) return "waiting for a worker";
  if (p.step === "listing") return `listing the folder (${p.done || 0} objects so far)`;
  if (p.step === "counting") return `counting pages (${p.done}/${p.total} files)`;
  return p.step === "reading" ? "reading the file" : p.step;
}

export async function estimate(path, body, onProgress = () => {}, intervalMs = 700) {
  let view = await api("POST", path, body);
  while (view.status === "running") {
    onProgress(progressWords(view.progress));
    await new Promise((r) => setTimeout(r, intervalMs));
    view = await api("GET", view.poll);
  }
  if (view.status === "completed") return view.result;
  throw new ApiError(422, view.error || { message: "the estimate failed" });
}

export async function upload(file) {
  const registered = await api("POST", "/api/v1/files", { name: file.name, sizeBytes: file.size });
  const form = new FormData();
  for (const [k, v] of Object.entries(registered.upload.fields)) form.append(k, v);
  form.append("file", file);
  const response = await fetch(s3Url(registered.upload.url), { method: "POST", body: form });
  if (!response.ok) throw new ApiError(response.status, { error: { code: "UPLOAD_FAILED", message: "the upload to storage failed" } });
  return registered;
}
